"""The command line: a thin layer that parses arguments and hands off to one service per verb."""
