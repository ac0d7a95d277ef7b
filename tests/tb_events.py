"""Reading tensorboard event files back in tests, without tensorboard: the TFRecord framing by hand."""

from __future__ import annotations

import struct
from pathlib import Path


def tb_steps(run_dir, tag: str) -> list[int]:
    """The steps of ``tag`` in ``run_dir/tb``'s event files, in file order, read with the TFRecord framing (u64
    length, u32 length crc, the ``Event`` proto, u32 data crc; the crcs are not checked)."""
    from tensorboardX.proto import event_pb2

    steps = []
    for path in sorted((Path(run_dir) / "tb").glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
            pos += 12 + length + 4
            steps += [event.step for value in event.summary.value if value.tag == tag]
    return steps
