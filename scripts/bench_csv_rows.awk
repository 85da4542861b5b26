# One line per data row of an `autogemm bench --csv` file: our time and rate, cuBLASLt's time,
# the ratio, the diff and the configuration that ran, with why a row FAILED or was not timed.
#   awk -f scripts/bench_csv_rows.awk bench.csv        (scripts/gpu-configs.sh uses it)
# Columns are found by their header names (src/bench/bench_report.cpp, csv_header()), never by
# position: columns added to the CSV (diff_ref and failure were) cannot shift what is read.
# Fields are split as RFC 4180 says (config and failure are quoted and may hold commas or
# doubled quotes), in plain POSIX awk (Debian's default awk is mawk: no FPAT).

# Splits `line` into fields[1..n] and returns n.
function split_csv(line, fields,    n, i, c, field, quoted) {
  split("", fields)
  n = 1
  field = ""
  quoted = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (quoted) {
      if (c != "\"") {
        field = field c
      } else if (substr(line, i + 1, 1) == "\"") {
        field = field "\""
        i++
      } else {
        quoted = 0
      }
    } else if (c == "\"") {
      quoted = 1
    } else if (c == ",") {
      fields[n++] = field
      field = ""
    } else {
      field = field c
    }
  }
  fields[n] = field
  return n
}

# The named column of the current row ("" when the file has no such column).
function named(name) {
  return (name in column) ? row[column[name]] : ""
}

{ sub(/\r$/, "") }                      # CRLF files
/^[ \t]*$/ || /^#/ { next }             # blank lines and comments, as rows_from_csv skips them

!have_header {
  count = split_csv($0, header)
  for (i = 1; i <= count; i++) column[header[i]] = i
  required = "time_us tflops baseline_time_us ratio diff config"
  missing = ""
  required_count = split(required, names, " ")
  for (i = 1; i <= required_count; i++)
    if (!(names[i] in column)) missing = missing " " names[i]
  if (missing != "") {
    printf "bench_csv_rows.awk: %s: the header has no column%s (it has: %s)\n",
           FILENAME, missing, $0 > "/dev/stderr"
    failed = 1
    exit 2
  }
  have_header = 1
  next
}

{
  split_csv($0, row)
  failure = named("failure")
  if (named("time_us") == "") {
    if (failure != "") print "not timed: FAILED: " failure
    else print "not timed: autogemm did not serve it (n/a; the table or --json says why)"
    next
  }
  baseline = named("baseline_time_us") == "" ? "      n/a   " \
                                             : sprintf("%9.1f us", named("baseline_time_us"))
  ratio = named("ratio") == "" ? "n/a" : sprintf("%.3f", named("ratio"))
  diff = named("diff") == "" ? "-" : named("diff")
  if (named("diff_ref") != "") diff = diff " (" named("diff_ref") ")"
  printf "%9.1f us %7.1f TFLOP/s  cuBLASLt %s  ratio %s  diff %s  ran %s%s\n",
         named("time_us"), named("tflops"), baseline, ratio, diff, named("config"),
         failure == "" ? "" : "  FAILED: " failure
}

END {
  if (failed) exit 2
  if (!have_header) {
    printf "bench_csv_rows.awk: %s: no CSV header\n", FILENAME > "/dev/stderr"
    exit 2
  }
}
