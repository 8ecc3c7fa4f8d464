# SPDX-License-Identifier: Apache-2.0
# What bench_infer.py and bench_train.py share: the load note above a table, the cell format
# (median and min–max of the repeats) and the markdown table itself.
import os
import statistics


def load_note():
    load, cores = os.getloadavg()[0], os.cpu_count()
    busy = " (busy: other work is running, figures are not comparable)" if load > 0.5 else ""
    return f"load average before the run {load:.2f} on {cores} cores{busy}"


def fmt(vals, unit="rate"):
    """A cell: `n/a (why)` for an error string, else the median and range; rates as 12.3k,
    unit "us" as microseconds."""
    if isinstance(vals, str):
        return f"n/a ({vals})"
    med, lo, hi = statistics.median(vals), min(vals), max(vals)
    if unit == "us":
        return f"{med:.3g} µs ({lo:.3g}–{hi:.3g})"
    k = lambda v: f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"  # noqa: E731
    return f"{k(med)} ({k(lo)}–{k(hi)})"


def print_table(header, rows):
    table = [header] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
