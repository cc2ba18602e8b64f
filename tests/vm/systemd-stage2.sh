#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stage 2 for `vmrun.py --init=systemd`: started by initramfs-init.sh (cxvm.stage2=) after
# switch_root, as PID 1. Writes the two units of the scenario run into /run/systemd/system
# (tmpfs, in the unit search path; no exec: heredocs only) and becomes systemd:
#   cxvm.target       the boot target (vmrun.py puts systemd.unit=cxvm.target on the kernel
#                     command line): basic.target + cxvm-run.service
#   cxvm-run.service  runs systemd-plan.sh: the plan's scenarios as ordinary root processes
#                     under a real systemd, results to /run/cxvm, then powers off
# Stage 1 already mounted /run, /tmp, /dev/pts, /dev/shm, cgroup2 (nsdelegate), tracefs,
# debugfs, configfs and the results share /run/cxvm; systemd keeps existing mounts.
here=${0%/*}
# The host root may be a container image: systemd would take /.dockerenv as "running in a
# container" and then ignore the kernel command line (systemd.unit=, systemd.mask=). The
# guest is a VM; hide the marker in the overlay.
[ -e /.dockerenv ] && rm -f /.dockerenv
[ -e /run/.containerenv ] && rm -f /run/.containerenv
# Same image: a policy-rc.d that forbids starting services (101) would stop dpkg's
# postinst from starting units; a real system has none.
[ -e /usr/sbin/policy-rc.d ] && rm -f /usr/sbin/policy-rc.d
# systemd-tmpfiles --boot empties /tmp (tmp.conf: "D /tmp"), and the checkout or build dir
# may live under the host's /tmp (CI clones anywhere): keep /tmp as it is.
mkdir -p /etc/tmpfiles.d && echo 'd /tmp 1777 root root -' >/etc/tmpfiles.d/tmp.conf
mkdir -p /run/systemd/system || echo "cxvm stage2: cannot create /run/systemd/system"
cat >/run/systemd/system/cxvm.target <<UNIT
[Unit]
Description=cxvm: run the VM scenarios under systemd
Requires=basic.target
After=basic.target
Wants=cxvm-run.service
AllowIsolate=yes
UNIT
cat >/run/systemd/system/cxvm-run.service <<UNIT
[Unit]
Description=cxvm: scenario plan
After=basic.target dbus.socket
Wants=dbus.socket

[Service]
Type=oneshot
ExecStart=/bin/bash $here/systemd-plan.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
# On failure of the runner itself, still end the VM (the host reads the missing status).
ExecStopPost=/bin/sh -c 'echo o >/proc/sysrq-trigger'
UNIT
echo "cxvm stage2: exec systemd"
exec /lib/systemd/systemd
