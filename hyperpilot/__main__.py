"""`python -m hyperpilot`: the same command line as the `hyperpilot` script."""

from hyperpilot.cli import main

if __name__ == "__main__":
    main()
