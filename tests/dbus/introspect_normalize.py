#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Compare the org.cxiosync1.Manager interface of two introspection XML files.

Usage: introspect_normalize.py EXPECTED.xml ACTUAL.xml [INTERFACE]
(INTERFACE defaults to org.cxiosync1.Manager.)
Normalizes to one line per member (methods, signals, properties with their arguments in
order, names, types and directions; property access), sorted; ignores comments, whitespace,
annotations and the standard org.freedesktop.DBus.* interfaces. Exit 0 if equal, 1 with a
diff otherwise.
"""
import difflib
import sys
import xml.etree.ElementTree as ET

IFACE = "org.cxiosync1.Manager"


def normalize(path, IFACE=IFACE):
    root = ET.parse(path).getroot()
    lines = []
    found = False
    for iface in root.iter("interface"):
        if iface.get("name") != IFACE:
            continue
        found = True
        for m in iface.findall("method"):
            args = ["%s %s:%s" % (a.get("direction", "in"), a.get("name"), a.get("type"))
                    for a in m.findall("arg")]
            lines.append("method %s(%s)" % (m.get("name"), ", ".join(args)))
        for s in iface.findall("signal"):
            args = ["%s:%s" % (a.get("name"), a.get("type")) for a in s.findall("arg")]
            lines.append("signal %s(%s)" % (s.get("name"), ", ".join(args)))
        for p in iface.findall("property"):
            lines.append("property %s:%s %s" % (p.get("name"), p.get("type"), p.get("access")))
    if not found:
        lines.append("<interface %s missing>" % IFACE)
    return sorted(lines)


def main():
    iface = sys.argv[3] if len(sys.argv) > 3 else IFACE
    expected, actual = normalize(sys.argv[1], iface), normalize(sys.argv[2], iface)
    if expected == actual:
        print("\n".join(actual))
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        [l + "\n" for l in expected], [l + "\n" for l in actual], "idl", "introspected"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
