# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 4 proofs with the procfs detector. Assertions: sense_procfs.check.py.
SENSE_BACKEND=procfs
. "$CXVM_DIR/scenarios/sense_detect.inc"
