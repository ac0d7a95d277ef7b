"""Replays: whole games recorded for people to watch.

- ``record``: one game of any lineup (policies and bots) in one compiled program: every decision step's public
  state, each seat's action, the policies' top actions and value estimates, the final placements.
- ``fights``: the fights of a fight step, tick by tick, from the combat's own recording.
- ``format``: the versioned JSON format of a record (docs/replays.md): ``write``, ``read``, ``actions``.
- ``viewer``: a record as one self-contained HTML page that plays it back in a browser, offline.
- ``play`` / ``play_server``: a seat for a person: one game against named players on a page served on 127.0.0.1;
  the finished game saved as a record.
"""
