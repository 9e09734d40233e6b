"""Annotation queues (issue 32): allocate → annotate → certify in one store.

- `queues`: creating a queue (which items, in which order), inviting and revoking annotators;
- `certify`: the owner's status: progress, agreement, and the certification state recomputed
  from the labels as they stand (`metrics.sequential`, the anytime-valid alt-test);
- `app`: the web pages: the annotators' page and its JSON API (the only writing web surface, on
  its own restricted engine) and the owner's read-only page, which the viewer also serves.
"""
