"""A queued write's record path may have spaces and non-ASCII letters, as a direct write's may (issue 36 item 15).

With ``readable_names: true`` a topic's file is named after its title
(``topics/Project Alpha Two.md``). am/git/checks.py held a grouped or queued
write's paths to ASCII letters, digits, '.', '_' and '-', so a queued
``topic add`` in such a vault was refused while the same direct write landed.
Now a queued path is held to what a direct write's is (am/records/ids.py
``check_record_path``) and hostile ones stay refused: '..', absolute, Git's own
folder in any spelling, control and invisible characters, device names.
"""

from __future__ import annotations

import pytest

from am.errors import UsageError
from am.git.checks import check_path

LEGITIMATE = [
    "topics/Project Alpha Two.md",
    "topics/Café Müller.md",
    "topics/李伟.md",
    "topics/Réunion — notes (2026).md",
    "facts/2026/12/03/f-20261203-1930-3f0e99.md",
    "relations/2026/12/project-alpha--depends-on--tool-redis.md",
]
HOSTILE = [
    "../topics/x.md", "topics/../../x.md", "/etc/x.md", "topics//x.md", "topics/./x.md",
    ".git/hooks/x.md", "topics/.git/x.md", "topics/.GIT/x.md", "topics/git~1/x.md", "topics/.git. /x.md",
    "topics/\u200c.git/x.md", "topics/.g\u200cit/x.md", "topics/a\u202eb.md", "topics/a\x00b.md",
    "topics/a\nb.md", "topics/a\x1bb.md", "topics/a\\b.md", "topics/C:x.md", "topics/CON.md", "topics/nul.md",
    "topics/.hidden.md", "notes/x.md", "topics/x.txt", "topics/" + "é" * 130 + ".md",
]


@pytest.mark.parametrize("path", LEGITIMATE)
def test_a_record_path_a_direct_write_allows_passes_the_queue_check(path: str) -> None:
    assert str(check_path(path, records_only=True)) == path


@pytest.mark.parametrize("path", HOSTILE)
def test_a_hostile_path_is_still_refused(path: str) -> None:
    with pytest.raises(UsageError):
        check_path(path, records_only=True)


def test_a_queued_topic_add_with_a_readable_name_lands(alpha: object) -> None:
    """A grouped write from this process goes through the same check as a queued one."""
    from am.vault import Vault

    vault: Vault = alpha  # type: ignore[assignment]
    yml = vault.root / ".am" / "vault.yml"
    yml.write_text(yml.read_text(encoding="utf-8") + "readable_names: true\n", encoding="utf-8")
    from conftest import run_git

    run_git(vault.root, "commit", "-q", "--no-verify", "-am", "readable names")
    with Vault.open(vault.root, actor="agent") as v:
        from am.git.coord import spool
        from am.git.coord.group import Request
        from am.git.light import Change
        from am.records.codec import render_record
        from am.records.model import Topic

        topic = Topic(id="project-alpha-two", kind="project", title="Project Alpha Two",
                      created="2026-12-03T19:30:00+00:00")
        message = v.authorship.message("topic", "add", ["project-alpha-two"])
        queue = v.root / ".git" / "am" / "queue"
        queue.mkdir(parents=True, exist_ok=True)
        ticket = spool.put(queue, Request((Change("topics/Project Alpha Two.md",  # type: ignore[arg-type]
                                                  render_record(topic).encode(), None),),
                                          message, v.authorship.author(), None))
        try:
            v.add_fact("The leader's own write.", topics=["project-alpha"], id="fact-leader")
            import json

            got = json.loads((queue / f"{ticket.rid}.done").read_text())
            assert "commit" in got, got
        finally:
            spool.withdraw(ticket)
    assert "topics/Project Alpha Two.md" in run_git(vault.root, "ls-files", "topics")
