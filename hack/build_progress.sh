# Sourced by the hack/*/build.sh scripts: a Go build on a fresh machine runs
# for many minutes (kube-apiserver took 13 on 2 loaded cores) and prints
# nothing by itself, so each long step says how long it has been running.
#
# with_elapsed LABEL COMMAND [ARG...]
#   Runs COMMAND with its stdout sent to stderr (the scripts' stdout is the
#   path they print), and while it runs prints "LABEL: N s elapsed" to stderr
#   every EVICTOR_PROGRESS_SECONDS seconds (default 20, so that a line comes
#   at least every 30 s even when the machine is loaded). Returns COMMAND's
#   exit status. Plain text only: the lines go to logs and pipes as they are.
#   SIGINT or SIGTERM ends COMMAND too (a background job of a script ignores
#   the terminal's Ctrl-C by itself).

with_elapsed() {
  local label="$1"
  shift
  local every="${EVICTOR_PROGRESS_SECONDS:-20}"
  if ! [[ "$every" =~ ^[1-9][0-9]*$ ]]; then
    echo "EVICTOR_PROGRESS_SECONDS=$every: expected a whole number of seconds >= 1" >&2
    return 2
  fi
  local start=$SECONDS
  local next=$((SECONDS + every))
  "$@" >&2 &
  local pid=$!
  # shellcheck disable=SC2064 # the pid is fixed when the trap is set
  trap "kill -TERM $pid 2>/dev/null; exit 130" INT
  # shellcheck disable=SC2064
  trap "kill -TERM $pid 2>/dev/null; exit 143" TERM
  # Polled each second rather than one long sleep: the command's end is seen
  # within a second, and no sleeping child outlives the function holding the
  # caller's stderr open.
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)); then
      echo "$label: $((SECONDS - start)) s elapsed" >&2
      next=$((SECONDS + every))
    fi
  done
  local status=0
  wait "$pid" || status=$?
  trap - INT TERM
  return "$status"
}
