# SPDX-License-Identifier: GPL-2.0-or-later
# systemd boot mode self-check (vmrun.py --init=systemd): PID 1 is systemd, the system bus
# answers, no unit of the boot transaction failed.
. "$CXVM_LIB"
read -r pid1 </proc/1/comm
[ "$pid1" = systemd ] || cxvm_fail "PID 1 is '$pid1', not systemd"
ver=$(systemctl show -p Version --value)
cxvm_result_str systemd_version "$ver"
busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId >/dev/null ||
	cxvm_fail "the system bus does not answer"
failed=$(systemctl list-units --state=failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
cxvm_result_str failed_units "$failed"
cxvm_log "systemd $ver is PID 1; failed units: ${failed:-none}"
# The guest's distribution (vmrun.py --root boots another root than the host's, e.g. Debian 13):
# CXVM_EXPECT_OS names the codename the run must be on, so a wrong root cannot pass as it.
os=$(. /etc/os-release && echo "${VERSION_CODENAME:-?}")
cxvm_result_str os_codename "$os"
cxvm_result_str kernel "$(uname -r)"
cxvm_log "guest: Debian $os, kernel $(uname -r), systemd $ver"
if [ -n "${CXVM_EXPECT_OS:-}" ] && [ "$os" != "$CXVM_EXPECT_OS" ]; then
	cxvm_fail "guest OS is '$os', expected '$CXVM_EXPECT_OS'"
fi
