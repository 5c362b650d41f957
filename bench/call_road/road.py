#!/usr/bin/env python3
"""The files one call enters, in order, from a record of call_road.cc.

Each function's file is where the debugger says it is defined (DWARF, by demangled name, via
gdb), so an inline function counts in its header. A file is entered when a function of it is
called from another file; the indent shows who called whom, and a call its caller made among its
last few calls (a loop's body) adds to that line's count.
  road.py EXE RECORD
"""
import collections
import re
import subprocess
import sys

kLoopBody = 4  # calls a loop's body may make between two of the same


def defining_files(exe, root):
    """demangled signature (no spaces) -> the file that defines it, relative to root."""
    listing = subprocess.run(["gdb", "-batch", "-ex", "info functions ringgrad::", exe],
                             capture_output=True, text=True, check=True).stdout
    files, current = {}, None
    for line in listing.splitlines():
        if line.startswith("File "):
            current = line[5:].rstrip(":").removeprefix(root)
        elif current and (m := re.match(r"\d+:\s+(.*);$", line)):
            signature = m.group(1)
            files[re.sub(r"\s+", "", signature[signature.find("ringgrad::"):])] = current
    return files


def short(name):
    """ringgrad::collectives::ShmLink::exchange(...) -> ShmLink::exchange"""
    name = re.sub(r"ringgrad::(collectives::|transport::)?", "", name)
    depth, out = 0, ""
    for c in name:  # drop template arguments and parameter lists
        depth += c in "<("
        if depth == 0:
            out += c
        depth -= c in ">)"
    return out


def main(exe, record, root):
    events = [line.split() for line in open(record)]
    addresses = sorted({a for _, a in events})
    lines = subprocess.run(["addr2line", "-f", "-C", "-e", exe] + addresses,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    files = defining_files(exe, root)
    where = {}
    for i, a in enumerate(addresses):
        name, place = lines[2 * i], lines[2 * i + 1]
        where[a] = (name, files.get(re.sub(r"\s+", "", name), place.split(":")[0].removeprefix(root)))
    # The call tree at the scale of files: a node per entry into a file, its children the files
    # it calls; a loop's calls are one node each, with a count.
    root_node = {"children": [], "count": 1}
    stack = [("", root_node)]  # (file, node) per function running
    for kind, a in events:
        name, file = where[a]
        if kind == "X":
            if len(stack) > 1:
                stack.pop()
            continue
        parent_file, parent = stack[-1]
        if file == parent_file:
            stack.append((file, parent))
            continue
        key, children = (file, short(name)), parent["children"]
        # A loop: a call among the last few of its caller's adds to that one's count.
        node = next((n for k, n in reversed(children[-kLoopBody:]) if k == key), None)
        if node is None:
            node = {"children": [], "count": 0}
            children.append((key, node))
        node["count"] += 1
        stack.append((file, node))
    entered = collections.Counter()

    def show(node, depth):
        for (file, name), child in node["children"]:
            entered[file] += 1
            times = f"  (x{child['count']})" if child["count"] > 1 else ""
            print(f"{'  ' * depth}{file}: {name}{times}")
            show(child, depth + 1)

    show(root_node, 0)
    print(f"\n{len(entered)} files, in the order first entered:")
    print("  " + ", ".join(entered))
    print("entered from more than one place:")
    for file, n in entered.most_common():
        if n > 1:
            print(f"  {n:3d}  {file}")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
