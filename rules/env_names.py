"""Which environment variables a job may set: one rule, shared by the gateway (a job spec's
`environment` and `container.environment`) and the adapters (their own check before a
batch script, a local job or a container launch line is built). Pure.

A name is judged by what it becomes where the program runs, and container runtimes
translate names (read in their sources: Apptainer internal/pkg/util/env, Charliecloud
ch-run.c and its manual):
- Apptainer strips APPTAINERENV_ and SINGULARITYENV_, SingularityCE SINGULARITYENV_, and
  sets the rest inside the container (`..._PREPEND_PATH` and `..._APPEND_PATH` edit PATH);
  so `APPTAINERENV_LD_PRELOAD` becomes LD_PRELOAD there.
- Names starting APPTAINER_ or SINGULARITY_ configure the runtime itself: every option has
  one (APPTAINER_BIND, APPTAINER_ENV_FILE, APPTAINER_CONTAINALL, ...). In a job's
  environment they would rewrite the launch line the gateway built.
- Charliecloud has no prefix: ch-run passes the environment through as it is, and
  `--set-env NAME=VALUE` sets NAME as given; its LD_PRELOAD is LD_PRELOAD itself.
The prefixes are stripped again and again (a runtime inside a container strips the next
one), and what remains must be neither on the deny-list nor a runtime's own setting.
"""

from __future__ import annotations

from rules.text import ENV_NAME

# Variables that change how the loader or a shell starts a program, before it runs.
ENV_DENYLIST = frozenset({
    "LD_PRELOAD", "LD_AUDIT", "LD_DEBUG_OUTPUT", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS",
    "PROMPT_COMMAND", "PS4", "IFS", "PYTHONSTARTUP", "PERL5OPT", "NODE_OPTIONS",
})
# Prefixes a container runtime strips, setting the rest inside the container.
RUNTIME_PASS_PREFIXES = ("APPTAINERENV_", "SINGULARITYENV_")
# Prefixes of the variables a container runtime reads as its own options.
RUNTIME_SETTING_PREFIXES = ("APPTAINER_", "SINGULARITY_")


def runtime_name(name: str) -> str:
    """`name` as the program in a container sees it: every runtime's prefix stripped."""
    while prefix := next((p for p in RUNTIME_PASS_PREFIXES if name.startswith(p)), ""):
        name = name[len(prefix):]
    return name


def env_name_problem(name: str) -> str | None:
    """None when a job may set the variable `name`, else a message naming it and why."""
    if problem := ENV_NAME.problem(name):
        return problem
    target = runtime_name(name)
    if not target:
        return (f"environment name {name!r} is not allowed: it is a container runtime's "
                "prefix with no variable name after it")
    became = "" if target == name else (
        f"a container runtime sets it as {target} inside the container, and ")
    if target in ENV_DENYLIST:
        return (f"environment name {name!r} is not allowed: {became}{target} changes how the "
                "loader or a shell starts a program, before the program itself runs")
    if target.startswith(RUNTIME_SETTING_PREFIXES):
        return (f"environment name {name!r} is not allowed: {became}{target} configures the "
                "container runtime itself, whose options the gateway's launch line decides; "
                "use the job spec's container section (binds, environment) instead, or, for a "
                "runtime your own script starts, set it in that script")
    return None
