"""Sokoban's rules on hand-placed rooms (pushes, blocked pushes, solving) and its generated levels (each
one solvable, a box off its target); the C game equals this reference bit for bit: test_games.py."""

from __future__ import annotations

from collections import deque

import numpy as np
from pufferbox_ocean.games.sokoban import CELLS, DELTAS, SIDE, Sokoban

UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3


def room(player: int, boxes: list[int], targets: list[int], walls: list[int] = ()) -> Sokoban:
    """An empty walled room with the given cells (cell = row * 8 + column)."""
    env = Sokoban(boxes=len(boxes))
    env.reset(seed=0)
    env.wall = [int(c // SIDE in (0, SIDE - 1) or c % SIDE in (0, SIDE - 1)) for c in range(CELLS)]
    for c in walls:
        env.wall[c] = 1
    env.box = [int(c in boxes) for c in range(CELLS)]
    env.target = [int(c in targets) for c in range(CELLS)]
    env.player = player
    return env


def test_pushing_the_last_box_onto_its_target_pays_and_ends_the_episode():
    env = room(player=26, boxes=[27, 45], targets=[28, 45])  # row 3: player, box, target; the other box done
    _, reward, terminated, truncated, info = env.step(RIGHT)
    assert env.player == 27 and env.box[28] and terminated and not truncated
    assert reward == np.float32(-0.01 + 1 + 10) and info == {"solved": 1.0, "on_target": 2.0}


def test_pushing_a_box_off_its_target_costs_one_and_a_plain_step_costs_a_hundredth():
    env = room(player=26, boxes=[27, 45], targets=[27, 44])
    _, reward, terminated, *_ = env.step(RIGHT)
    assert reward == np.float32(-1.01) and env.box[28] and not terminated
    _, reward, *_ = env.step(UP)
    assert reward == np.float32(-0.01) and env.player == 19


def test_a_box_against_a_wall_or_another_box_does_not_move_and_neither_does_the_player():
    env = room(player=9, boxes=[10, 11], targets=[40, 41])
    _, reward, *_ = env.step(RIGHT)  # 10 is pushed into the box on 11
    assert env.player == 9 and env.box[10] and env.box[11] and reward == np.float32(-0.01)
    env = room(player=12, boxes=[14, 30], targets=[40, 41], walls=[15])
    env.step(RIGHT)
    env.step(RIGHT)  # the box on 14 against the wall on 15
    assert env.player == 13 and env.box[14]
    env.step(UP)  # 13 is on row 1: up is the border wall
    assert env.player == 13


def solvable(env: Sokoban) -> bool:
    """Breadth-first search over (player, boxes) states: can every box reach a target?"""
    start = (env.player, frozenset(c for c in range(CELLS) if env.box[c]))
    targets = frozenset(c for c in range(CELLS) if env.target[c])
    seen, queue = {start}, deque([start])
    while queue:
        player, boxes = queue.popleft()
        if boxes == targets:
            return True
        for d in DELTAS:
            nxt = player + d
            if env.wall[nxt]:
                continue
            moved = boxes
            if nxt in boxes:
                if env.wall[nxt + d] or nxt + d in boxes:
                    continue
                moved = boxes - {nxt} | {nxt + d}
            state = (nxt, moved)
            if state not in seen:
                seen.add(state)
                queue.append(state)
    return False


def test_generated_levels_are_solvable_with_a_box_off_its_target():
    env = Sokoban()
    for seed in range(30):
        env.reset(seed=seed)
        assert sum(env.box) == sum(env.target) == env.boxes == 2
        assert not any(env.box[c] and env.wall[c] for c in range(CELLS))
        assert not env.wall[env.player] and not env.box[env.player]
        assert env.on_target() < env.boxes
        assert solvable(env), seed
