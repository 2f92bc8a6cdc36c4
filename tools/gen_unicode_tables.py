#!/usr/bin/env python3
"""gen_unicode_tables.py - writes lib/tokenizer/unicode_tables.cpp, the character classes
the tokenizer's pre-tokenization regexes need, from the Unicode Character Database.

Usage (from the repository root; Debian's `unicode-data` package provides the files):
    python3 tools/gen_unicode_tables.py [--ucd /usr/share/unicode] [--out lib/tokenizer/unicode_tables.cpp]

What it emits (the .h beside the .cpp is hand-written and declares these):
  * kCharClassRanges: sorted, non-overlapping, maximal [lo, hi] code point ranges, each
    tagged LETTER (\\p{L} = Lu Ll Lt Lm Lo), NUMBER (\\p{N} = Nd Nl No) or SPACE (\\s =
    the White_Space property of PropList.txt). Every other code point (unassigned ones
    included) is OTHER. A code point is in at most one class: White_Space holds no letter
    or number (checked below).
  * kCaseRanges: sorted, maximal ranges of the letter-case sets of the o200k split regex
    (Phi-4-mini): bit 1 = in [\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}] ("upper" run), bit 2 = in
    [\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}] ("lower" run); Lm, Lo and marks are in both (3).
  * kFoldRanges: the non-ASCII code points whose simple case folding (CaseFolding.txt
    status C or S) is one of the ASCII letters of the contractions in Llama-3's
    `(?i:'s|'t|'re|'ve|'m|'ll|'d)` - in Unicode 15 only U+017F LATIN SMALL LETTER LONG S.

It also writes lib/tokenizer/unicode_nfc_tables.cpp, the data of Unicode normalization form C
(the NFC normalizer of Qwen2.5/Qwen3's tokenizer.json): canonical combining classes (ranges
of non-zero ccc), single-level canonical decompositions (Hangul syllables are algorithmic and
not listed) and the primary composites (pairs whose composition is not excluded by
Full_Composition_Exclusion), and tests/data/nfc_cases.txt: every line of the UCD's
NormalizationTest.txt whose NFC or NFD differs from its source (Hangul syllables sampled), as
"source;NFC" in hex code points
(the independent reference test_tokenizer_families checks nfc() against).

The output is deterministic for a given UCD: run it again after a Unicode update and commit
the result; the UCD version is recorded in the generated file.
"""
import argparse
import os
import re
import sys

LETTER, NUMBER, SPACE = 1, 2, 3
CLASS_NAMES = {LETTER: "CC_LETTER", NUMBER: "CC_NUMBER", SPACE: "CC_SPACE"}
CASE_UPPER, CASE_LOWER, CASE_EITHER = 1, 2, 3
CASE_NAMES = {CASE_UPPER: "CASE_UPPER", CASE_LOWER: "CASE_LOWER", CASE_EITHER: "CASE_EITHER"}
CASE_OF_CATEGORY = {"Lu": CASE_UPPER, "Lt": CASE_UPPER, "Ll": CASE_LOWER, "Lm": CASE_EITHER, "Lo": CASE_EITHER,
                    "Mn": CASE_EITHER, "Mc": CASE_EITHER, "Me": CASE_EITHER}
FOLD_TARGETS = "strvemld"  # letters of 's 't 're 've 'm 'll 'd


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield line


def general_categories(ucd):
    """code point -> general category, expanding the <..., First>/<..., Last> ranges."""
    cats = {}
    first = None
    with open(os.path.join(ucd, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            if len(fields) < 3:
                continue
            cp, name, cat = int(fields[0], 16), fields[1], fields[2]
            if name.endswith(", First>"):
                first = cp
                continue
            if name.endswith(", Last>"):
                if first is None:
                    sys.exit("UnicodeData.txt: range end without start at %04X" % cp)
                for c in range(first, cp + 1):
                    cats[c] = cat
                first = None
                continue
            cats[cp] = cat
    return cats


def white_space(ucd):
    out = set()
    for line in read_lines(os.path.join(ucd, "PropList.txt")):
        rng, prop = [p.strip() for p in line.split(";")[:2]]
        if prop != "White_Space":
            continue
        lo, _, hi = rng.partition("..")
        for c in range(int(lo, 16), int(hi or lo, 16) + 1):
            out.add(c)
    return out


def ucd_version(ucd):
    with open(os.path.join(ucd, "PropList.txt"), encoding="utf-8") as f:
        m = re.match(r"#\s*PropList-([\d.]+)\.txt", f.readline())
    return m.group(1) if m else "unknown"


def folds(ucd):
    out = []
    for line in read_lines(os.path.join(ucd, "CaseFolding.txt")):
        parts = [p.strip() for p in line.split(";")]
        cp, status, mapping = int(parts[0], 16), parts[1], parts[2]
        if status not in ("C", "S") or " " in mapping:
            continue
        target = int(mapping, 16)
        if cp >= 0x80 and target < 0x80 and chr(target) in FOLD_TARGETS:
            out.append((cp, target))
    return sorted(out)


def ranges(classes):
    """[(lo, hi, cls)] maximal runs of equal class over the sorted code points."""
    out = []
    for cp in sorted(classes):
        cls = classes[cp]
        if out and out[-1][1] == cp - 1 and out[-1][2] == cls:
            out[-1][1] = cp
        else:
            out.append([cp, cp, cls])
    return out


def nfc_data(ucd):
    """(ccc ranges, decompositions, compositions) from UnicodeData.txt and DerivedNormalizationProps.txt."""
    ccc = {}
    decomp = {}
    with open(os.path.join(ucd, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cp = int(fields[0], 16)
            if int(fields[3]) != 0:
                ccc[cp] = int(fields[3])
            d = fields[5]
            if d and not d.startswith("<"):
                decomp[cp] = [int(x, 16) for x in d.split()]
    excluded = set()
    for line in read_lines(os.path.join(ucd, "DerivedNormalizationProps.txt")):
        rng, prop = [p.strip() for p in line.split(";")[:2]]
        if prop != "Full_Composition_Exclusion":
            continue
        lo, _, hi = rng.partition("..")
        excluded.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    ccc_rows = ranges(ccc)
    decomp_rows = sorted((cp, d[0], d[1] if len(d) > 1 else 0) for cp, d in decomp.items())
    comp_rows = sorted((d[0], d[1], cp) for cp, d in decomp.items() if len(d) == 2 and cp not in excluded)
    return ccc_rows, decomp_rows, comp_rows


def write_nfc_tables(ucd, out):
    ccc_rows, decomp_rows, comp_rows = nfc_data(ucd)
    lines = ["// unicode_nfc_tables.cpp - GENERATED by tools/gen_unicode_tables.py from the Unicode %s" % ucd_version(ucd),
             "// Character Database; do not edit. The data of normalization form C: non-zero canonical",
             "// combining classes, single-level canonical decompositions (Hangul is algorithmic) and the",
             "// primary composites, each sorted for binary search.",
             '#include "tokenizer/unicode_tables.h"', "", "namespace gpt::unicode {", "",
             "const CombiningRange kCombiningRanges[] = {"]
    lines += ["    {0x%04X, 0x%04X, %d}," % (lo, hi, c) for lo, hi, c in ccc_rows]
    lines += ["};", "const size_t kCombiningRangeCount = sizeof kCombiningRanges / sizeof kCombiningRanges[0];", "",
              "const Decomposition kDecompositions[] = {"]
    lines += ["    {0x%04X, 0x%04X, 0x%04X}," % row for row in decomp_rows]
    lines += ["};", "const size_t kDecompositionCount = sizeof kDecompositions / sizeof kDecompositions[0];", "",
              "const Composition kCompositions[] = {"]
    lines += ["    {0x%04X, 0x%04X, 0x%04X}," % row for row in comp_rows]
    lines += ["};", "const size_t kCompositionCount = sizeof kCompositions / sizeof kCompositions[0];", "",
              "} // namespace gpt::unicode"]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d combining ranges, %d decompositions, %d compositions" % (out, len(ccc_rows), len(decomp_rows), len(comp_rows)))


def write_nfc_cases(ucd, out):
    import bz2
    path = os.path.join(ucd, "NormalizationTest.txt")
    opener = open
    if not os.path.exists(path):  # Debian's unicode-data ships it compressed
        path += ".bz2"
        opener = bz2.open
    lines = ["# NFC cases from the Unicode %s NormalizationTest.txt (GENERATED by tools/gen_unicode_tables.py):" % ucd_version(ucd),
             "# source;NFC as space-separated hex code points: every line whose NFC differs from its source or",
             "# whose NFD does (Hangul syllables: every 97th)"]
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("@"):
                continue
            cols = line.split(";")
            # Also the composed characters NFC keeps (decomposed and composed back), Hangul
            # syllables (algorithmic) only every 97th.
            hangul = len(cols[0].split()) == 1 and 0xAC00 <= int(cols[0], 16) <= 0xD7A3
            if cols[0] != cols[1] or (cols[0] != cols[2] and (not hangul or int(cols[0], 16) % 97 == 0)):
                lines.append("%s;%s" % (cols[0], cols[1]))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d cases" % (out, len(lines) - 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ucd", default="/usr/share/unicode", help="folder with UnicodeData.txt, PropList.txt, CaseFolding.txt")
    ap.add_argument("--out", default=os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "tokenizer", "unicode_tables.cpp")))
    ap.add_argument("--nfc-out", default=os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "tokenizer", "unicode_nfc_tables.cpp")))
    ap.add_argument("--nfc-cases-out", default=os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "nfc_cases.txt")))
    args = ap.parse_args()
    write_nfc_tables(args.ucd, args.nfc_out)
    write_nfc_cases(args.ucd, args.nfc_cases_out)

    cats = general_categories(args.ucd)
    ws = white_space(args.ucd)
    classes = {}
    for cp, cat in cats.items():
        if cat in ("Lu", "Ll", "Lt", "Lm", "Lo"):
            classes[cp] = LETTER
        elif cat in ("Nd", "Nl", "No"):
            classes[cp] = NUMBER
    for cp in ws:
        if cp in classes:
            sys.exit("U+%04X is both White_Space and a letter/number; the tables assume disjoint classes" % cp)
        classes[cp] = SPACE
    rows = ranges(classes)
    case_rows = ranges({cp: CASE_OF_CATEGORY[cat] for cp, cat in cats.items() if cat in CASE_OF_CATEGORY})
    fold_rows = folds(args.ucd)

    lines = []
    lines.append("// unicode_tables.cpp - GENERATED by tools/gen_unicode_tables.py from the Unicode %s" % ucd_version(args.ucd))
    lines.append("// Character Database; do not edit. Sorted, disjoint, maximal code point ranges of \\p{L},")
    lines.append("// \\p{N} and \\s (White_Space), the letter-case sets of the o200k regex, and the non-ASCII")
    lines.append("// simple case folds onto s t r v e m l d.")
    lines.append('#include "tokenizer/unicode_tables.h"')
    lines.append("")
    lines.append("namespace gpt::unicode {")
    lines.append("")
    lines.append('const char *const kUnicodeVersion = "%s";' % ucd_version(args.ucd))
    lines.append("")
    lines.append("const ClassRange kCharClassRanges[] = {")
    for lo, hi, cls in rows:
        lines.append("    {0x%04X, 0x%04X, %s}," % (lo, hi, CLASS_NAMES[cls]))
    lines.append("};")
    lines.append("const size_t kCharClassRangeCount = sizeof kCharClassRanges / sizeof kCharClassRanges[0];")
    lines.append("")
    lines.append("const CaseRange kCaseRanges[] = {")
    for lo, hi, cls in case_rows:
        lines.append("    {0x%04X, 0x%04X, %s}," % (lo, hi, CASE_NAMES[cls]))
    lines.append("};")
    lines.append("const size_t kCaseRangeCount = sizeof kCaseRanges / sizeof kCaseRanges[0];")
    lines.append("")
    lines.append("const FoldEntry kFoldEntries[] = {")
    for cp, target in fold_rows:
        lines.append("    {0x%04X, '%s'}," % (cp, chr(target)))
    lines.append("};")
    lines.append("const size_t kFoldEntryCount = sizeof kFoldEntries / sizeof kFoldEntries[0];")
    lines.append("")
    lines.append("} // namespace gpt::unicode")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d class ranges, %d case ranges, %d folds (Unicode %s)" % (args.out, len(rows), len(case_rows), len(fold_rows),
                                                                          ucd_version(args.ucd)))


if __name__ == "__main__":
    main()
