# Helpers the benchmark scripts share (sourced after they set $tmp, a scratch directory).
command -v h5dump >/dev/null 2>&1 || { echo "$(basename "$0"): h5dump is needed to read the run logs" >&2; exit 1; }
h5vals() { # h5vals FILE DATASET: the values, one per line, floats in full (h5dump prints 6 digits)
  h5dump -d "$2" -m '%.17g' -y -w 0 -o "$tmp/vals.txt" "$1" >/dev/null 2>&1 || return 1
  tr ', \t' '\n\n\n' <"$tmp/vals.txt" | awk NF
}
h5attr() { # h5attr FILE OBJECT/ATTRIBUTE: a scalar attribute's value
  h5dump -a "$2" "$1" | sed -n 's/^ *(0): //p'
}
median() { # the median of the numbers on standard input ("nan" when there are none)
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
    else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
