"""Adversarial regression suite (issue 14): each test holds one defect an adversarial run found.

Fast tests run in the default suite; the minute-long races are marked ``stress``.
docs/reliability.md maps every scenario to the test that holds it.
"""
