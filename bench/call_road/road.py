#!/usr/bin/env python3
"""The files one call enters, in order, from a record of call_road.cc.

Each function's file is where the debugger says it is defined (DWARF, by demangled name, via
gdb), so an inline function counts in its header. A file is entered when a function of it is
called from another file; the indent shows who called whom, and the turns of a loop are folded
into one, each line counting its calls.
  road.py EXE RECORD [ROOT]   (ROOT: the checkout's path with a trailing /, cut from file names;
                              files outside it, the standard library's, are not shown)
"""
import collections
import os
import re
import subprocess
import sys

kLoopBody = 40  # the most calls into other files one turn of a loop makes


def defining_files(exe):
    """demangled signature (no spaces) -> the file that defines it, as the debug info names it."""
    listing = subprocess.run(["gdb", "-batch", "-ex", "info functions ringgrad::", exe],
                             capture_output=True, text=True, check=True).stdout
    files, current = {}, None
    for line in listing.splitlines():
        if line.startswith("File "):
            current = line[5:].rstrip(":")
        elif current and (m := re.match(r"\d+:\s+(.*);$", line)):
            signature = m.group(1)
            files[re.sub(r"\s+", "", signature[signature.find("ringgrad::"):])] = current
    return files


def short(name):
    """ringgrad::collectives::ShmLink::exchange(...) -> ShmLink::exchange"""
    name = re.sub(r"\[abi:[^]]*\]", "", name)
    name = re.sub(r"ringgrad::(collectives::|transport::)?", "", name)
    depth, out = 0, ""
    for c in name:  # drop template arguments and parameter lists
        depth += c in "<("
        if depth == 0:
            out += c
        depth -= c in ">)"
    return out.removesuffix(" const").split(" ")[-1]  # without a return type ("float apply_op")


def clean(path, root):
    """A file's path within the checkout: build-road/collectives/../../collectives/x.cc and
    ../../collectives/x.cc (paths relative to where the compiler ran) both become
    collectives/x.cc; a path outside the checkout stays absolute."""
    path = os.path.normpath(path.removeprefix(root))
    while path.startswith("../"):
        path = path[3:]
    return path


def merge(into, other):
    """Adds node `other`'s calls to `into`, whose key is the same."""
    into["count"] += other["count"]
    into["children"] = fold(into["children"] + other["children"])


def fold(children):
    """A loop's calls as one block: where the last k calls repeat the k before them (k up to
    kLoopBody), the repeat is merged into them, so each line carries its count."""
    out = []
    for item in children:
        out.append(item)
        folded = True
        while folded:
            folded = False
            for k in range(1, min(kLoopBody, len(out) // 2) + 1):
                if [key for key, _ in out[-2 * k:-k]] == [key for key, _ in out[-k:]]:
                    for (_, kept), (_, repeat) in zip(out[-2 * k:-k], out[-k:]):
                        merge(kept, repeat)
                    del out[-k:]
                    folded = True
                    break
    return out


def main(exe, record, root):
    lines_in = open(record).read().splitlines()
    truncated = [line for line in lines_in if line.startswith("#")]
    events = [line.split() for line in lines_in if not line.startswith("#")]
    addresses = sorted({a for _, a in events})
    lines = subprocess.run(["addr2line", "-f", "-C", "-e", exe] + addresses,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    files = defining_files(exe)
    where = {}
    for i, a in enumerate(addresses):
        name, place = lines[2 * i], lines[2 * i + 1]
        where[a] = (name, clean(files.get(re.sub(r"\s+", "", name), place.split(":")[0]), root))
    # The call tree at the scale of files: a node per entry into a file, its children the
    # entries it makes into other files. Functions outside the checkout are passed through.
    tree = {"children": [], "count": 1}
    stack = [("", tree)]  # (file, node) per function running
    for kind, a in events:
        name, file = where[a]
        if kind == "X":
            if len(stack) > 1:
                stack.pop()
            continue
        parent_file, parent = stack[-1]
        if file == parent_file or file.startswith("/"):
            stack.append((parent_file, parent))
            continue
        node = {"children": [], "count": 1}
        parent["children"].append(((file, short(name)), node))
        stack.append((file, node))

    def fold_all(node):
        for _, child in node["children"]:
            fold_all(child)
        node["children"] = fold(node["children"])

    fold_all(tree)
    entered = collections.Counter()

    def show(node, depth):
        for (file, name), child in node["children"]:
            entered[file] += 1
            times = f"  (x{child['count']})" if child["count"] > 1 else ""
            print(f"{'  ' * depth}{file}: {name}{times}")
            show(child, depth + 1)

    show(tree, 0)
    for line in truncated:
        print(f"warning: the record is cut short ({line[2:]}): the road above is its first part")
    print(f"\n{len(entered)} files, in the order first entered:")
    print("  " + ", ".join(entered))
    print("entered from more than one place:")
    for file, n in entered.most_common():
        if n > 1:
            print(f"  {n:3d}  {file}")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
