#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Stand-in for systemd's notify socket in VM scenarios (there is no systemd in the guest).

    daemon_notify.py SOCKET OUTFILE [WATCH_FILE]

Binds a datagram socket at SOCKET and appends every sd_notify message to OUTFILE as
"<CLOCK_MONOTONIC seconds> <message with newlines as |>". When a message holds READY=1 and
WATCH_FILE is given, the file's content at that instant is appended as a line
"<t> AT_READY <content with newlines as |>": the proof that a limit was restored *before*
the daemon said it was ready. Runs until killed.

Once the socket is bound it appends "<t> LISTENING <token>", the token from
$CXD_NOTIFY_TOKEN: several listeners may write the same OUTFILE in one scenario, and the
caller must wait for *its* listener's bind (an older LISTENING line said nothing about it).
"""
import os
import socket
import sys
import time

path, out = sys.argv[1], sys.argv[2]
watch = sys.argv[3] if len(sys.argv) > 3 else None
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", buffering=1) as f:
    f.write("%.6f LISTENING %s\n" % (time.monotonic(), os.environ.get("CXD_NOTIFY_TOKEN", "")))
    while True:
        msg = s.recv(65536).decode("utf-8", "replace")
        t = time.monotonic()
        line = "%.6f %s\n" % (t, msg.strip().replace("\n", "|"))
        if watch and "READY=1" in msg.split("\n"):
            with open(watch) as w:
                snap = w.read().strip().replace("\n", "|")
            line += "%.6f AT_READY %s\n" % (t, snap)
        f.write(line)
