#!/bin/sh
# A short sample of the mutation campaign (tests/faults/mutate.sh): five
# kinds of damage to each file a reader reads, none of which may crash,
# hang, trip a sanitizer or fail without a clear message.  make check-long
# runs the whole campaign.
exec sh "$PTKIT_SRC/tests/faults/mutate.sh" -n 1
