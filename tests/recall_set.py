"""The recall set: facts a project's memory holds, and the questions agents ask of it (English and Chinese).

``records()`` returns, deterministically, the topics and facts written on top of the
demo vault: a handbook of facts that answer the questions (``HANDBOOK``), and a few
hundred facts of ordinary project chatter around them (``filler``) that share much of
their vocabulary, so a question has to find its answer among near misses.
``QUESTIONS`` pairs each question with the ids of the facts that answer it (demo
facts included). tests/test_recall.py measures top-5 recall over them.
"""

from __future__ import annotations

import random

from am.records.model import Fact, Record, Topic

TOPICS = [
    ("project-orbit", "project", "Orbit", ("Orbit 服务",)),
    ("tool-pytest", "tool", "pytest", ()),
    ("tool-ci", "tool", "CI pipeline", ("持续集成",)),
    ("tool-postgres", "tool", "PostgreSQL", ("Postgres",)),
    ("concept-hooks", "concept", "Git hooks", ("钩子",)),
    ("concept-deploy", "concept", "Deployment", ("发布",)),
    ("person-zhang-min", "person", "张敏", ("Zhang Min",)),
]

# (id, topics, text). Each answers at least one question below.
HANDBOOK: list[tuple[str, tuple[str, ...], str]] = [
    ("hb-run-tests", ("tool-pytest", "project-orbit"),
     "To run the test suite, call `make test`; it runs pytest with the -x flag and the fast marker."),
    ("hb-slow-tests", ("tool-pytest",),
     "Slow stress tests are marked @pytest.mark.stress and only run in the nightly job."),
    ("hb-hook-install", ("concept-hooks",),
     "The pre-commit hook is installed by running `am hooks install` once in each clone."),
    ("hb-hook-skip", ("concept-hooks",),
     "Skipping the hooks with --no-verify is forbidden on the main branch."),
    ("hb-deploy-friday", ("concept-deploy", "project-orbit"),
     "Deploys to production are frozen on Fridays after 15:00."),
    ("hb-deploy-rollback", ("concept-deploy",),
     "A failed deploy is rolled back with `orbit rollback --to previous`, which takes about two minutes."),
    ("hb-db-migrations", ("tool-postgres", "project-orbit"),
     "Database migrations must be backwards compatible for one release, because old pods keep running."),
    ("hb-db-pool", ("tool-postgres",),
     "The connection pool to PostgreSQL is capped at 40 connections per service instance."),
    ("hb-ci-cache", ("tool-ci",),
     "The CI pipeline caches the pip wheels keyed by the lock file's hash."),
    ("hb-ci-timeout", ("tool-ci",),
     "A CI job is killed after 45 minutes; split long test jobs into shards."),
    ("hb-owner-review", ("person-zhang-min", "project-orbit"),
     "Zhang Min reviews every change to the billing schema."),
    ("hb-log-level", ("project-orbit",),
     "Orbit logs at INFO in production; set ORBIT_LOG=debug to get request bodies."),
    ("hb-secrets", ("project-orbit",),
     "Secrets are read from the vault agent at startup; never commit them to the repository."),
    ("hb-flaky", ("tool-pytest", "tool-ci"),
     "The flaky test test_upload_retry is quarantined; it fails when the network is slow."),
    ("hb-python", ("project-orbit",),
     "Orbit requires Python 3.11 or newer because it uses TaskGroup."),
    ("hb-zh-tests", ("tool-pytest",), "单元测试用 pytest 运行，集成测试需要先启动本地数据库。"),
    ("hb-zh-deploy", ("concept-deploy",), "生产环境发布需要两个人审批，周五下午不发布。"),
    ("hb-zh-rollback", ("concept-deploy",), "回滚操作会保留最近三个版本的镜像。"),
    ("hb-zh-hooks", ("concept-hooks",), "提交前的钩子会检查代码格式和密钥泄露。"),
    ("hb-zh-db", ("tool-postgres",), "数据库连接池的上限是每个实例四十个连接。"),
    ("hb-zh-ci", ("tool-ci",), "持续集成的缓存按锁文件的哈希值区分，依赖变化时自动失效。"),
    ("hb-zh-review", ("person-zhang-min",), "张敏负责计费模块的代码评审，改动表结构要先找她。"),
    ("hb-zh-logs", ("project-orbit",), "排查线上问题时，日志保留十四天，超过要去归档存储里找。"),
    ("hb-zh-oncall", ("project-orbit",), "值班同学每周一交接，交接文档放在团队空间。"),
    ("hb-zh-perf", ("project-orbit",), "接口的性能目标是九十九分位延迟低于两百毫秒。"),
    ("hb-zh-config", ("project-orbit",), "服务的配置文件在 config/orbit.yaml，修改后需要重启。"),
    ("hb-zh-python", ("project-orbit",), "项目要求 Python 3.11 以上版本。"),
]

# (question, ids that answer it). Demo facts: the Redis session TTL, AOF off, getUsers batch, token-bucket
# rate limit on feat-rate-limit, slice-query reads replicas, Li Wei reviews API changes.
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("how do I run tests", ("hb-run-tests",)),
    ("how to run the tests?", ("hb-run-tests",)),
    ("which tests only run nightly", ("hb-slow-tests",)),
    ("stress tests marker", ("hb-slow-tests",)),
    ("how do I install the hook", ("hb-hook-install",)),
    ("can I skip hooks with no-verify", ("hb-hook-skip",)),
    ("are deploys allowed on Friday", ("hb-deploy-friday",)),
    ("how to roll back a failed deployment", ("hb-deploy-rollback",)),
    ("rules for database migrations", ("hb-db-migrations",)),
    ("how many database connections can a service open", ("hb-db-pool",)),
    ("what does CI cache", ("hb-ci-cache",)),
    ("why was my CI job killed", ("hb-ci-timeout",)),
    ("who reviews billing schema changes", ("hb-owner-review",)),
    ("how do I get debug logs", ("hb-log-level",)),
    ("where do secrets come from", ("hb-secrets",)),
    ("flaky upload test", ("hb-flaky",)),
    ("which python version is required", ("hb-python", "hb-zh-python")),
    ("how long do user sessions last in redis", ("f-20260923-1210-8d2e41",)),
    ("what happens when redis restarts", ("f-20261012-1100-07bb3e",)),
    ("is there a batch user lookup", ("f-20261002-0915-c4f1a5",)),
    ("rate limit per API key", ("f-20261005-1630-e5d2aa",)),
    ("who approves API changes in Alpha", ("f-20260924-0945-5a7c90",)),
    ("does slice-query read from replicas", ("f-20260924-1400-b31f07",)),
    ("怎么运行单元测试", ("hb-zh-tests",)),
    ("集成测试之前要做什么", ("hb-zh-tests",)),
    ("周五可以发布吗", ("hb-zh-deploy", "hb-deploy-friday")),
    ("发布需要谁审批", ("hb-zh-deploy",)),
    ("回滚会保留几个版本", ("hb-zh-rollback",)),
    ("提交前的钩子检查什么", ("hb-zh-hooks",)),
    ("数据库连接池上限是多少", ("hb-zh-db",)),
    ("持续集成的缓存什么时候失效", ("hb-zh-ci",)),
    ("谁负责计费模块的评审", ("hb-zh-review",)),
    ("日志保留多久", ("hb-zh-logs",)),
    ("值班什么时候交接", ("hb-zh-oncall",)),
    ("接口延迟的性能目标", ("hb-zh-perf",)),
    ("配置文件在哪里", ("hb-zh-config",)),
    ("项目需要什么 Python 版本", ("hb-zh-python", "hb-python")),
    ("回滚保留多少个镜像", ("hb-zh-rollback",)),
    ("限流是怎么做的", ("f-20261005-1630-e5d2aa",)),
    ("接口变更需要谁批准", ("f-20260924-0945-5a7c90",)),
    ("强一致读怎么办", ("f-20260924-1400-b31f07",)),
    ("令牌桶每秒多少次", ("f-20261005-1630-e5d2aa",)),
    ("Redis 重启会怎样", ("f-20261012-1100-07bb3e",)),
    ("谁负责 Alpha 的接口评审", ("f-20260924-0945-5a7c90",)),
]

_EN = ["The {s} {v} the {o} {t}.", "We noticed the {s} {v} the {o} {t}.", "Remember that the {s} {v} the {o} {t}."]
_SUBJECTS = ["billing job", "upload service", "search index", "test runner", "deploy script", "session store",
             "metrics exporter", "nightly job", "schema checker", "API gateway", "release tool", "log shipper"]
_VERBS = ["retries", "calls", "caches", "depends on", "writes to", "reads from", "times out against", "wraps"]
_OBJECTS = ["database", "CI runner", "hook script", "rollback command", "connection pool", "config file",
            "lock file", "review queue", "staging cluster", "message queue", "test fixtures", "log archive"]
_TAILS = ["twice a day", "on the main branch", "since the last release", "when the queue is full",
          "behind a feature flag", "in the staging cluster", "for every tenant", "after the migration"]
_ZH = ["{s}{v}{o}，{t}。", "注意：{s}{v}{o}，{t}。"]
_ZH_SUBJECTS = ["计费任务", "上传服务", "搜索索引", "测试脚本", "发布脚本", "会话存储", "指标导出", "夜间任务"]
_ZH_VERBS = ["调用", "缓存", "依赖", "写入", "读取", "重试"]
_ZH_OBJECTS = ["数据库", "持续集成节点", "钩子脚本", "回滚命令", "连接池", "配置中心", "评审队列", "预发布集群"]
_ZH_TAILS = ["每天两次", "只在主分支上", "自上次发布以来", "队列满的时候", "在功能开关后面", "对每个租户"]

CREATED = "2026-11-{day:02d}T{hour:02d}:00:00+08:00"


def filler(count: int = 320, seed: int = 20) -> list[Fact]:
    """Return ``count`` facts of project chatter that share the handbook's vocabulary."""
    rng = random.Random(seed)
    topics = [t[0] for t in TOPICS]
    out = []
    for i in range(count):
        if i % 3 == 0:
            text = rng.choice(_ZH).format(s=rng.choice(_ZH_SUBJECTS), v=rng.choice(_ZH_VERBS),
                                          o=rng.choice(_ZH_OBJECTS), t=rng.choice(_ZH_TAILS))
        else:
            text = rng.choice(_EN).format(s=rng.choice(_SUBJECTS), v=rng.choice(_VERBS),
                                          o=rng.choice(_OBJECTS), t=rng.choice(_TAILS))
        out.append(Fact(id=f"fill-{i:04d}", topics=(rng.choice(topics),), body=text + "\n",
                        confidence=rng.choice(["high", "medium", "low"]), provenance="human",
                        created=CREATED.format(day=1 + i % 27, hour=8 + i % 10)))
    return out


def records() -> list[Record]:
    """Return the topics, the handbook and the filler, in a fixed order."""
    out: list[Record] = [Topic(id=tid, kind=kind, title=title, aliases=aliases, created=CREATED.format(day=1, hour=8))
                         for tid, kind, title, aliases in TOPICS]
    out += [Fact(id=fid, topics=topics, body=text + "\n", confidence="high", provenance="human",
                 created=CREATED.format(day=2 + n % 25, hour=9)) for n, (fid, topics, text) in enumerate(HANDBOOK)]
    out += filler()
    return out
