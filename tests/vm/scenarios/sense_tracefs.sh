# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 4 proofs with the tracefs detector. Assertions: sense_tracefs.check.py.
SENSE_BACKEND=tracefs
. "$CXVM_DIR/scenarios/sense_detect.inc"
