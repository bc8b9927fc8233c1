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
