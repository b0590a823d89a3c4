"""Questions that share no word with their answers (English, Chinese, and across the two).

They ask of the recall vault (tests/recall_set.py on top of the demo vault) in
other words than the facts use: "how long are logins remembered" for "Alpha keeps
user sessions in Redis with a 30-minute TTL". Full text cannot find these answers
at all (tests/test_semantic.py checks that no term of a question matches its
answers); the vector level of the semantic extra is what can. Written before the
figures were measured, and kept whether the model answers them or not.
"""

from __future__ import annotations

SESSION_TTL = "f-20260923-1210-8d2e41"
REDIS_RESTART = "f-20261012-1100-07bb3e"
BATCH_LOOKUP = "f-20261002-0915-c4f1a5"
RATE_LIMIT = "f-20261005-1630-e5d2aa"
API_REVIEW = "f-20260924-0945-5a7c90"

SEMANTIC_QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("how long are logins remembered", (SESSION_TTL,)),
    ("throttling policy", (RATE_LIMIT,)),
    ("what happens to signed-in people when the cache server reboots", (REDIS_RESTART,)),
    ("fetch many accounts at once", (BATCH_LOOKUP,)),
    ("who signs off on interface modifications", (API_REVIEW,)),
    ("execute the unit checks", ("hb-run-tests",)),
    ("is releasing allowed before the weekend", ("hb-deploy-friday",)),
    ("undo a broken release", ("hb-deploy-rollback",)),
    ("limit on simultaneous DB sockets", ("hb-db-pool",)),
    ("where are credentials loaded", ("hb-secrets",)),
    ("verbose output for troubleshooting", ("hb-log-level",)),
    ("minimum interpreter needed", ("hb-python", "hb-zh-python")),
    ("unreliable case that got disabled", ("hb-flaky",)),
    ("is it ok to bypass commit checks on trunk", ("hb-hook-skip",)),
    ("登录状态保存多长时间", (SESSION_TTL,)),
    ("怎么撤销一次失败的上线", ("hb-deploy-rollback",)),
    ("密码和令牌从哪里读取", ("hb-secrets",)),
    ("一次取多个用户", (BATCH_LOOKUP,)),
    ("编译流水线超时", ("hb-ci-timeout",)),
    ("谁审核账单表的修改", ("hb-zh-review", "hb-owner-review")),
    ("值守人员什么时候换班", ("hb-zh-oncall",)),
    ("响应速度要求", ("hb-zh-perf",)),
]
