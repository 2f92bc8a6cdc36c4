#!/bin/sh
# Dump the King James Bible from Debian's bible-kjv / bible-kjv-text packages
# as a plain-text training corpus:
#   - one verse per line, in canonical order (Genesis 1:1 .. Revelation 22:21),
#   - the "Ge1:1 " reference prefix removed, runs of spaces collapsed,
#   - an empty line between chapters.
# Output: tools/train/data/kjv.txt.gz (gzip -9 -n, so the file is reproducible).
#
# Needs: apt-get install bible-kjv   (pulls in bible-kjv-text)
# Usage: tools/train/extract_kjv.sh [OUTPUT.txt.gz]
set -eu

out=${1:-"$(dirname "$0")/data/kjv.txt.gz"}
command -v bible >/dev/null 2>&1 || {
    echo "error: 'bible' not found; install Debian's bible-kjv package" >&2
    exit 1
}
mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT

# -f turns pretty-printing OFF: one verse per line, "Book<ch>:<v> text".
# The range Gen1:1-Rev22:21 is the whole text.
bible -f Gen1:1-Rev22:21 | LC_ALL=C awk '
    {
        if (!match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /)) {
            printf "error: unexpected line %d: %s\n", NR, $0 > "/dev/stderr"; bad = 1; exit 1
        }
        ref = substr($0, 1, RLENGTH - 1)
        text = substr($0, RLENGTH + 1)
        sub(/:[0-9]+$/, "", ref)               # book+chapter, e.g. "Ge1"
        gsub(/[ \t]+/, " ", text); sub(/^ /, "", text); sub(/ $/, "", text)
        if (NR > 1 && ref != prev) print ""    # blank line between chapters
        print text
        prev = ref; n++
    }
    END {
        if (bad) exit 1
        if (n != 31102) { printf "error: expected 31102 verses, got %d\n", n > "/dev/stderr"; exit 1 }
        printf "%d verses\n", n > "/dev/stderr"
    }' | gzip -9 -n > "$tmp"
mv "$tmp" "$out"
trap - EXIT
ls -l "$out" >&2
