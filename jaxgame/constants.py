"""Fixed shapes of the game: seats, board, bench, shop and the action table.

These are static (they set array shapes) and therefore not part of the
run-time configuration.

Unit slots: every player owns 32 unit slots, ``0..7`` the bench and
``8..31`` the board. Board cell ``c = row * BOARD_COLS + col`` (row 0 is the
front row, the one facing the opponent) lives in slot ``BENCH_SIZE + c``.
"""

NUM_PLAYERS = 8
BOARD_COLS = 8
BOARD_ROWS = 3
BOARD_CELLS = BOARD_COLS * BOARD_ROWS  # 24
BENCH_SIZE = 8
NUM_SLOTS = BENCH_SIZE + BOARD_CELLS  # 32
SHOP_SIZE = 6
MAX_LEVEL = 9

# ---- flat discrete action table (see docs/rules.md, "Actions") ----
ACTION_END_TURN = 0  # end turn; also the no-op
ACTION_BUY = 1  # 1..6: buy shop slot 0..5
ACTION_REROLL = ACTION_BUY + SHOP_SIZE  # 7
ACTION_BUY_XP = ACTION_REROLL + 1  # 8
ACTION_LOCK = ACTION_BUY_XP + 1  # 9: toggle the shop lock
ACTION_SELL = ACTION_LOCK + 1  # 10..41: sell slot 0..31
ACTION_PLACE = ACTION_SELL + NUM_SLOTS  # 42..233: bench b -> board cell c, 42 + b*24 + c
ACTION_RECALL = ACTION_PLACE + BENCH_SIZE * BOARD_CELLS  # 234..257: board cell c -> bench
NUM_ACTIONS = ACTION_RECALL + BOARD_CELLS  # 258

# ---- combat grid: two 8x3 boards facing each other ----
GRID_COLS = BOARD_COLS  # 8
GRID_ROWS = 2 * BOARD_ROWS  # 6
MAX_FIGHTERS = 2 * BOARD_CELLS  # 48
