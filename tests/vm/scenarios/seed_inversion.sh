# SPDX-License-Identifier: GPL-2.0-or-later
# vm.seed_inversion: the seed sync inversion with 16 MiB and io.max wbps=1MiB/s.
# Measures with tests/vm/scenarios/sync_inversion.sh; seed_inversion.check.py asserts.
export CXVM_SIZES_MIB=16 CXVM_LIMIT_BPS=1048576 CXVM_MODES="unlimited limited"
# A loaded host slows TCG: re-measure a slow unlimited sync (the check takes the fastest).
export CXVM_UNLIMITED_TRIES=3 CXVM_UNLIMITED_RETRY_ABOVE_MS=2000
. "$CXVM_DIR/scenarios/sync_inversion.sh"
