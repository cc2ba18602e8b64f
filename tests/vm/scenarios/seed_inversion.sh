# vm.seed_inversion: the seed sync inversion with 16 MiB and io.max wbps=1MiB/s.
# Measures with tests/vm/scenarios/sync_inversion.sh; seed_inversion.check.py asserts.
export CXVM_SIZES_MIB=16 CXVM_LIMIT_BPS=1048576 CXVM_MODES="unlimited limited"
. "$CXVM_DIR/scenarios/sync_inversion.sh"
