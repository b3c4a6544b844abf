# ptquery's chrome output nests strictly: per thread, in (start, longest
# first) order, every complete event lies inside the innermost open one or
# after it; ts in microseconds matches the span's start_ns exactly.
[.traceEvents[] | select(.ph == "X") |
 {tid, s: ((.ts * 1000) | round), e: (((.ts * 1000) | round) +
  ((.dur * 1000) | round)), d: .args.depth, ok: (((.ts * 1000) | round) ==
  .args.start_ns)}]
| (all(.[]; .ok)) and
  (group_by(.tid) | all(.[];
    sort_by([.s, -.e, .d]) |
    reduce .[] as $x ({st: [], ok: true};
      .st |= until(length == 0 or .[-1].e > $x.s or
        (.[-1].e == $x.s and .[-1].s == $x.s); .[:-1]) |
      (if (.st | length) > 0 and $x.e > .st[-1].e then .ok = false
       else . end) |
      .st += [$x]) | .ok))
