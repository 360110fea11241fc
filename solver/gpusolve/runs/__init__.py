"""What each solving command does, from its files to what it shows, without `click`.

One module per command (`plan`, `frontier`, `colo`, `estimate`): a request (the parsed
options), one function that loads, solves and renders, and a `CommandOutput` (`output`)
that says what goes to stdout, which files are written whole, the closing stderr lines
and the exit code. `gpusolve.commands.*` parse the options, call that function and hand
the output to `commands.deliver`. Nothing is imported here, so `--help` stays fast.
"""
