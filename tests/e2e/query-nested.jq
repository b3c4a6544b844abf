# ptquery's chrome output nests strictly, in the order it is written: per
# thread, every complete event either lies strictly inside the innermost
# open one (starts after it starts, ends before it ends) or starts at or
# after its end; no event is empty.  Times are compared as the doubles a
# consumer reads, so any rounding that breaks nesting shows.
[.traceEvents[] | select(.ph == "X") | {tid, s: .ts, e: (.ts + .dur)}]
| (all(.[]; .e > .s)) and
  (group_by(.tid) | all(.[];
    reduce .[] as $x ({st: [], ok: true};
      .st |= until(length == 0 or .[-1].e > $x.s; .[:-1]) |
      (if (.st | length) > 0 and ($x.e >= .st[-1].e or $x.s <= .st[-1].s)
       then .ok = false else . end) |
      .st += [$x]) | .ok))
