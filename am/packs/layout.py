"""Where to draw a topic graph's nodes: deterministic, pure Python, computed once per vault commit by its caller.

Two layouts. Around a focus topic, rings: the focus in the middle, each hop
one ring further out, a node placed near the node that reached it. Otherwise a
force-directed layout (Fruchterman-Reingold) whose repulsion looks only at
nearby nodes (a grid of cells), so a 1,000-topic vault is laid out in well
under a second; the start is a spiral in id order, so the same graph always
gets the same picture.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SIZE", "layout"]

SIZE = 1000.0  # positions fall in [0, SIZE] x [0, SIZE]
_GOLDEN = math.pi * (3 - math.sqrt(5))
_BUDGET = 400_000  # node pairs and edges looked at, over all steps: a third of a second of pure Python
_KEEP = 8  # layouts kept, by their input (a server's threads share them)
_KEPT: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
_KEPT_LOCK = threading.Lock()


def layout(nodes: Sequence[str], edges: Iterable[tuple[str, str]], *, focus: str | None = None) -> dict[str, tuple[float, float]]:
    """Return (x, y) for every node, in [0, SIZE]; the same nodes and edges always give the same positions."""
    order = sorted(set(nodes))
    if not order:
        return {}
    index = {n: i for i, n in enumerate(order)}
    pairs = sorted({(min(index[a], index[b]), max(index[a], index[b]))
                    for a, b in edges if a in index and b in index and a != b})
    centre = index[focus] if focus is not None and focus in index else None
    # A pure function of these: the same graph asked again (the page's graph, then its export) is laid out once.
    key = (tuple(order), tuple(pairs), centre)
    points = _KEPT.get(key)
    if points is None:
        points = _fit(_rings(len(order), pairs, centre), centred=True) if centre is not None else \
            _fit(_forces(len(order), pairs))
        with _KEPT_LOCK:
            while len(_KEPT) >= _KEEP:
                _KEPT.pop(next(iter(_KEPT)))
            _KEPT[key] = points
    return {n: p for n, p in zip(order, points)}


def _rings(count: int, pairs: list[tuple[int, int]], centre: int) -> list[tuple[float, float]]:
    near: list[list[int]] = [[] for _ in range(count)]
    for a, b in pairs:
        near[a].append(b)
        near[b].append(a)
    depth = {centre: 0}
    parent: dict[int, int] = {}
    queue = deque([centre])
    while queue:
        node = queue.popleft()
        for other in sorted(near[node]):
            if other not in depth:
                depth[other] = depth[node] + 1
                parent[other] = node
                queue.append(other)
    far = max(depth.values()) + 1
    for node in range(count):  # not reached (links from outside the scope): the outermost ring
        depth.setdefault(node, far)
    angle = {centre: 0.0}
    points = [(0.0, 0.0)] * count
    for ring in range(1, max(depth.values()) + 1):
        members = [n for n in range(count) if depth[n] == ring]
        # Keep children next to their parent: order a ring by the parent's angle, then by id.
        members.sort(key=lambda n: (angle.get(parent.get(n, -1), 0.0), n))
        for k, node in enumerate(members):
            theta = 2 * math.pi * k / len(members) + (0.3 * ring)
            angle[node] = theta % (2 * math.pi)
            points[node] = (ring * math.cos(theta), ring * math.sin(theta))
    return points


def _forces(count: int, pairs: list[tuple[int, int]]) -> list[tuple[float, float]]:
    if count == 1:
        return [(0.0, 0.0)]
    k = 1.0  # the ideal edge length; the spiral below spaces nodes about k apart
    xs = [k * math.sqrt(i + 0.5) * math.cos(i * _GOLDEN) for i in range(count)]
    ys = [k * math.sqrt(i + 0.5) * math.sin(i * _GOLDEN) for i in range(count)]
    steps = 60 if count <= 1500 else 30
    temperature = math.sqrt(count) * k / 4
    cell = 3 * k  # repulsion is felt within three edge lengths: beyond that it is too weak to matter
    halves = ((1, -1), (1, 0), (1, 1), (0, 1))  # each pair of neighbouring cells is visited once
    reach2 = cell * cell
    spent = 0
    for step in range(steps):
        if spent > _BUDGET:
            break  # a dense graph of many topics: a rougher picture now beats a finer one in seconds
        dx = [0.0] * count
        dy = [0.0] * count
        grid: dict[tuple[int, int], list[int]] = {}
        for i in range(count):
            grid.setdefault((int(xs[i] // cell), int(ys[i] // cell)), []).append(i)
        for (gx, gy), members in grid.items():
            groups = [(members, True)] + [(grid[key], False) for ox, oy in halves
                                           if (key := (gx + ox, gy + oy)) in grid]
            spent += len(members) * sum(len(g) for g, _ in groups)
            for n, i in enumerate(members):
                xi, yi = xs[i], ys[i]
                fx = fy = 0.0
                for others, same in groups:
                    for j in (others[n + 1:] if same else others):
                        ddx, ddy = xi - xs[j], yi - ys[j]
                        dist2 = ddx * ddx + ddy * ddy
                        if dist2 > reach2:
                            continue
                        if dist2 < 1e-9:
                            ddx, ddy, dist2 = 0.01 * ((i - j) % 7 - 3), 0.01, 1e-4
                        force = k * k / dist2
                        ddx *= force
                        ddy *= force
                        fx += ddx
                        fy += ddy
                        dx[j] -= ddx
                        dy[j] -= ddy
                dx[i] += fx
                dy[i] += fy
        spent += len(pairs)
        for a, b in pairs:
            ddx, ddy = xs[a] - xs[b], ys[a] - ys[b]
            dist = math.sqrt(ddx * ddx + ddy * ddy) or 1e-6
            force = dist / k
            dx[a] -= ddx * force
            dy[a] -= ddy * force
            dx[b] += ddx * force
            dy[b] += ddy * force
        for i in range(count):  # a weak pull to the middle keeps unlinked topics from drifting away
            dist = math.sqrt(xs[i] * xs[i] + ys[i] * ys[i]) or 1.0
            dx[i] -= 0.5 * k * xs[i] / dist
            dy[i] -= 0.5 * k * ys[i] / dist
        limit = temperature * (1 - step / steps) + 0.01
        for i in range(count):
            length = math.sqrt(dx[i] * dx[i] + dy[i] * dy[i])
            if length > 0:
                move = min(length, limit) / length
                xs[i] += dx[i] * move
                ys[i] += dy[i] * move
    return list(zip(xs, ys))


def _fit(points: list[tuple[float, float]], *, centred: bool = False) -> list[tuple[float, float]]:
    """Scale into [0, SIZE] with a margin, keeping the aspect (``centred``: (0, 0) in the middle); round so that
    the output is byte-stable."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    if centred:
        cx = cy = 0.0
        span = 2 * max(max(abs(v) for v in xs), max(abs(v) for v in ys)) or 1.0
    else:
        cx = (max(xs) + min(xs)) / 2
        cy = (max(ys) + min(ys)) / 2
        span = max(max(xs) - min(xs), max(ys) - min(ys)) or 1.0
    margin = 0.08 * SIZE
    scale = (SIZE - 2 * margin) / span
    return [(round(SIZE / 2 + (x - cx) * scale, 1), round(SIZE / 2 + (y - cy) * scale, 1)) for x, y in points]
