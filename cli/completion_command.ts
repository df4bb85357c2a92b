/**
 * `kubectl evictor completion bash|zsh`: a shell completion script for
 * `kubectl-evictor` (and, through bin/kubectl_complete-evictor, for
 * `kubectl evictor` on kubectl >= 1.26): commands, their flags (read from
 * their help), `-o` formats, contexts, and Eviction and Hypervisor names
 * (through `kubectl get ... -o name`, with the words' --context and
 * --kubeconfig).
 *
 * @module
 */
import {
  COMMAND_USAGE,
  type CommandName,
  UsageError,
  usageOf,
} from "./usage.ts";

/** The names a command's arguments are: Hypervisors, Evictions or shells. */
const ARGUMENTS: Partial<Record<CommandName, string>> = {
  drain: "hypervisors",
  plan: "hypervisors",
  "force-complete": "hypervisors",
  abort: "hypervisors",
  completion: "shells",
  version: "none",
};

/**
 * The flags of each command, as its help names them, with the common ones.
 *
 * @example
 * ```ts
 * import { commandFlags } from "./completion_command.ts";
 * console.assert(commandFlags().drain?.includes("--reason"));
 * ```
 */
export function commandFlags(): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(COMMAND_USAGE).map(([name, usage]) => {
      const synopsis = usage.split("\n")[0] ?? "";
      const flags = new Set(synopsis.match(/(?<![\w-])--?[a-z][a-z-]*/g) ?? []);
      for (const f of ["--kubeconfig", "--context", "--help"]) flags.add(f);
      return [name, [...flags].sort()];
    }),
  );
}

/**
 * The completion script for `shell` (bash or zsh).
 *
 * @example
 * ```ts
 * import { completionScript } from "./completion_command.ts";
 * console.assert(completionScript("bash").includes("complete -F _kubectl_evictor kubectl-evictor"));
 * ```
 */
export function completionScript(shell: "bash" | "zsh"): string {
  const commands = Object.keys(COMMAND_USAGE);
  const flags = commandFlags();
  const flagCases = Object.entries(flags)
    .map(([c, f]) => `    ${c}) echo "${f.join(" ")}" ;;`)
    .join("\n");
  const argCases = commands
    .map((c) =>
      `    ${c}) echo ${ARGUMENTS[c as CommandName] ?? "evictions"} ;;`
    )
    .join("\n");
  const bash =
    `# kubectl-evictor completion for ${shell}: source <(kubectl evictor completion ${shell})

# what the arguments of a command name
_kubectl_evictor_arguments() {
  case "$1" in
${argCases}
    *) echo none ;;
  esac
}

_kubectl_evictor_flags() {
  case "$1" in
${flagCases}
  esac
}

# the candidates for the last of the words after the plugin's name
_kubectl_evictor_candidates() {
  local words=("$@") n=$# cmd="" prev="" i w
  local cur="\${words[n-1]}"
  local cluster=()
  (( n >= 2 )) && prev="\${words[n-2]}"
  for ((i = 0; i < n - 1; i++)); do
    w="\${words[i]}"
    case "$w" in
      --context|--kubeconfig) cluster+=("$w" "\${words[i+1]}"); ((i++)) ;;
      --context=*|--kubeconfig=*) cluster+=("$w") ;;
      --reason|--max-concurrent|--timeout|--output|-o|--os-cloud|--mb-per-second|--overhead-seconds|--fixed-seconds) ((i++)) ;;
      -*) ;;
      *) [[ -z "$cmd" ]] && cmd="$w" ;;
    esac
  done
  case "$prev" in
    --context) compgen -W "$(kubectl config get-contexts -o name 2>/dev/null)" -- "$cur"; return ;;
    --kubeconfig) compgen -f -- "$cur"; return ;;
    -o|--output)
      if [[ "$cmd" == plan ]]; then compgen -W "table json yaml" -- "$cur"
      else compgen -W "table wide name json yaml jsonpath= custom-columns= summary-json summary-yaml" -- "$cur"; fi
      return ;;
    --reason|--max-concurrent|--timeout|--os-cloud|--mb-per-second|--overhead-seconds|--fixed-seconds) return ;;
  esac
  if [[ -z "$cmd" ]]; then
    compgen -W "${commands.join(" ")} --version --help" -- "$cur"
    return
  fi
  if [[ "$cur" == -* ]]; then
    compgen -W "$(_kubectl_evictor_flags "$cmd")" -- "$cur"
    return
  fi
  case "$(_kubectl_evictor_arguments "$cmd")" in
    hypervisors|evictions)
      compgen -W "$(kubectl get "$(_kubectl_evictor_arguments "$cmd")" "\${cluster[@]}" -o name 2>/dev/null | sed 's|^[^/]*/||')" -- "$cur" ;;
    shells) compgen -W "bash zsh" -- "$cur" ;;
  esac
}

_kubectl_evictor() {
  local IFS=$'\\n'
  COMPREPLY=($(_kubectl_evictor_candidates "\${COMP_WORDS[@]:1:COMP_CWORD}"))
}
complete -o default -F _kubectl_evictor kubectl-evictor
`;
  return shell === "bash"
    ? bash
    : `#compdef kubectl-evictor\n# zsh runs the bash completion through bashcompinit\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
}

/**
 * Runs `completion SHELL`; returns the exit code.
 *
 * @example
 * ```ts ignore
 * runCompletion(["bash"], io);
 * ```
 */
export function runCompletion(
  args: string[],
  io: { out: (line: string) => void },
): number {
  if (args.includes("--help") || args.includes("-h")) {
    io.out(usageOf("completion"));
    return 0;
  }
  const [shell, ...rest] = args;
  if ((shell !== "bash" && shell !== "zsh") || rest.length > 0) {
    throw new UsageError(
      `completion ${
        args.join(" ") || "(no shell)"
      } is not valid: expected bash or zsh`,
      "completion",
    );
  }
  io.out(completionScript(shell).trimEnd());
  return 0;
}
