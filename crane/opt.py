"""``python -m crane.opt`` is ``crane-opt``."""

from crane.tools.opt import console_main

if __name__ == "__main__":
    console_main()
