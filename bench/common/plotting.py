"""What the benchmarks' plot scripts share.

pyplot(): matplotlib's pyplot drawing to files (the Agg backend, no display needed), or None
after saying that matplotlib is missing (Debian: python3-matplotlib), so a script can exit 0.
"""


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("matplotlib is not installed; no plots drawn")
        return None


def start(doc, argv):
    """For `plot.py OUT_PREFIX RESULT.json...`: (pyplot, out prefix, result paths), or the exit
    code to return: 2 after printing `doc` when arguments are missing, 0 without matplotlib."""
    if len(argv) < 3:
        print(doc)
        return 2
    plt = pyplot()
    if plt is None:
        return 0
    return plt, argv[1], argv[2:]


def save(plt, fig, path):
    """Lays fig out tightly, writes it to path (110 dpi) and closes it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(doc, argv, load, draw):
    """main() of a `plot.py OUT_PREFIX RESULT.json...` script: start(), then rows = load(paths)
    (1 after saying so when there are none), then draw(plt, prefix, rows), which returns the
    paths it wrote; prints them and returns 0."""
    got = start(doc, argv)
    if isinstance(got, int):
        return got
    plt, prefix, paths = got
    rows = load(paths)
    if not rows:
        print("no records to draw in", " ".join(paths))
        return 1
    wrote = draw(plt, prefix, rows)
    print("wrote", " ".join(wrote) if wrote else "nothing")
    return 0
