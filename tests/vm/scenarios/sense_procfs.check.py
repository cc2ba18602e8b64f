#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host check for sense_procfs: see sense_check.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sense_check  # noqa: E402

sys.exit(sense_check.main(sys.argv[1]))
