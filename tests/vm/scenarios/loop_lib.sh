# Shared by the loop_* scenarios (sourced after $CXVM_LIB). Not a scenario itself.
CXL_BIN=${CXIOSYNC_BUILD_DIR}/daemon/cxiosync-loop
CXL_RUN=/run/cxiosync
[ -x "$CXL_BIN" ] || cxvm_fail "no $CXL_BIN (build the cxiosync-loop target)"
modprobe loop || cxvm_fail "modprobe loop"
cxl() { "$CXL_BIN" --run-dir "$CXL_RUN" "$@"; }

# cxl_sys DEV ATTR: /sys/block/loopN/ATTR
cxl_sys() { cat "/sys/block/${1#/dev/}/$2"; }

# cxl_expect WHAT ACTUAL EXPECTED
cxl_expect() {
	[ "$2" = "$3" ] || cxvm_fail "$1: got '$2', expected '$3'"
	cxvm_log "ok: $1 = $2"
}

# cxl_no_leaks: no loop device is bound (the guest starts with none).
cxl_no_leaks() {
	local left
	left=$(losetup -a)
	[ -z "$left" ] || cxvm_fail "leaked loop devices: $left"
	cxvm_log "ok: no loop device left"
}
