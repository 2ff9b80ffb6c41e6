"""``python -m validation.microbench --out DIR``: the first memory microbenchmark (:mod:`.memory_v1`)."""

from validation.microbench.memory_v1 import main

if __name__ == "__main__":
    raise SystemExit(main())
