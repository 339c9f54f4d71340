"""Triple Triad's rules: flips, the illegal-choice replacement, counting with the hand, Sudden Death."""

from __future__ import annotations

from pufferbox_ocean.games.tripletriad import DECK, TripleTriad


def card(ranks):
    return DECK.index(ranks)


def test_a_placed_card_flips_only_the_neighbours_it_beats():
    env = TripleTriad()
    env.reset(seed=0)
    strong, weak, other = card((8, 9, 8, 3)), card((2, 2, 4, 2)), card((2, 5, 1, 2))
    env.hands = [[strong, -1, -1, -1, -1], [weak, other, -1, -1, -1]]
    env.card[1], env.owner[1] = weak, 2  # above the centre: its down rank 4 < strong's up 8: flipped
    env.card[3], env.owner[3] = other, 2  # left of the centre: its right rank 5 > strong's left 3: kept
    env.card[8], env.owner[8] = weak, 2  # diagonal: never compared
    env.step({"first": [0, 4], "second": [0, 0]})
    assert env.owner[4] == 1 and env.owner[1] == 1 and env.owner[3] == 2 and env.owner[8] == 2


def test_a_used_slot_and_an_occupied_cell_are_replaced_by_the_lowest_legal_ones():
    env = TripleTriad()
    env.reset(seed=0)
    held = env.hands[0][1]
    env.hands[0][0] = -1
    env.card[0], env.owner[0] = env.hands[1][0], 2
    env.step({"first": [0, 0], "second": [0, 0]})  # slot 0 played, cell 0 taken
    assert env.card[1] == held and env.owner[1] == 1 and env.illegal == 2


def test_a_full_board_counts_the_second_players_hand_card():
    for seed in range(20):
        env = TripleTriad()
        env.reset(seed=seed)
        for _ in range(9):  # every ply the mover's lowest slot on the lowest empty cell
            _, rewards, terms, _, infos = env.step({"first": [4, 8], "second": [4, 8]})
        first, second = env.owner.count(1), env.owner.count(2) + 1
        if terms["first"]:
            assert first != second and rewards["first"] == (1.0 if first > second else -1.0)
            assert rewards["second"] == -rewards["first"] and infos["second"]["rounds"] == 1.0
        else:  # 5-5: Sudden Death, a new round with full hands
            assert env.rounds == 2 and env.owner == [0] * 9 and all(c >= 0 for hand in env.hands for c in hand)


def test_sudden_death_deals_each_player_the_cards_it_owns():
    env = TripleTriad()
    env.reset(seed=0)
    # a board one ply from full: first owns cells 0-3, second 4-7, second keeps one card in hand
    env.card = [c % len(DECK) for c in range(8)] + [-1]
    env.owner = [1, 1, 1, 1, 2, 2, 2, 2, 0]
    weakest = card((2, 2, 4, 2))  # first's last card: its ranks are too low to flip cells 5 and 7
    env.hands = [[weakest, -1, -1, -1, -1], [20, -1, -1, -1, -1]]
    env.round_moves = env.moves = 8
    env.card[5], env.card[7] = card((8, 9, 8, 3)), card((8, 9, 8, 3))
    _, rewards, terms, _, _ = env.step({"first": [0, 8], "second": [0, 0]})
    assert not terms["first"] and rewards["first"] == 0.0  # 5 (board) vs 4 + 1 (hand): a tie
    assert env.rounds == 2 and env.round_moves == 0 and env.owner == [0] * 9
    assert env.hands[0] == [0, 1, 2, 3, weakest] and env.hands[1] == [4, card((8, 9, 8, 3)), 6, card((8, 9, 8, 3)), 20]
