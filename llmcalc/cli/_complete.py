"""Shell completion of model names (``llmcalc --install-completion``): the bundled configs by file
name and repo id, models in the local Hugging Face cache, and config files and folders."""

from __future__ import annotations

import glob
import os


def complete_model(incomplete: str) -> list[str]:
    """Names and paths that start with what has been typed (case-insensitively for names)."""
    from llmcalc.inputs import bundled, hfcache

    names = [p.stem for p in bundled.paths()]
    names += [r for r in bundled.repo_ids() if r not in names]
    names += [r for r in hfcache.repo_ids() if r not in names]
    typed = incomplete.lower()
    found = [n for n in names if n.lower().startswith(typed)]
    for path in sorted(glob.glob(glob.escape(os.path.expanduser(incomplete)) + "*")):
        if os.path.isdir(path):
            found.append(path + "/")
        elif path.endswith((".json", ".yaml", ".yml")):
            found.append(path)
    return found


SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
COMPLETION_OPTIONS = ("--show-completion", "--install-completion")


def shell_completion(args: list[str]) -> int | None:
    """`llmcalc --show-completion|--install-completion [SHELL]` where llmcalc picks the shell: the
    one named, else (when typer finds no shell among the parent processes, as under a CI runner
    or a detached job) $SHELL's; the exit code, or None to leave the line to typer."""
    import typer

    if len(args) not in (1, 2) or args[0] not in COMPLETION_OPTIONS:
        return None
    if len(args) == 2 and args[1] not in SHELLS:
        return None  # typer words the error
    from typer._completion_shared import _get_shell_name, get_completion_script, install

    shell = args[1] if len(args) == 2 else None
    if shell is None:
        if _get_shell_name() is not None:
            return None  # typer's own detection, as usual
        shell = os.path.basename(os.environ.get("SHELL", ""))
        if shell not in SHELLS:
            typer.echo(f"error: {args[0]}: no shell found running llmcalc, nor in $SHELL; name "
                       f"one: {args[0]} {' | '.join(SHELLS)}", err=True)
            return 2
    prog, var = "llmcalc", "_LLMCALC_COMPLETE"
    if args[0] == "--show-completion":
        typer.echo(get_completion_script(prog_name=prog, complete_var=var, shell=shell))
        return 0
    shell, path = install(shell=shell, prog_name=prog, complete_var=var)
    typer.secho(f"{shell} completion installed in {path}", fg="green")
    typer.echo("Completion will take effect once you restart the terminal")
    return 0
