# Sourced by tests/gpu/device-check.sh and device-run.sh. limited SECONDS COMMAND [ARG...]: COMMAND
# under timeout in a session of its own, then whatever of that session is left is killed. timeout
# alone stops only its own process group, and the GPU tests' runs sit under timeouts of their own
# (process groups of their own) that would go on using the GPU beside the next test. A watcher in
# the session kills it too should the caller die first (stopped by an outer limit, or by whoever ran
# it), since a session of its own outlives its caller. Exit status: COMMAND's, or 124 when the time
# ran out.

# Shell code that kills every process of session $1 but itself: pkill, or /proc where procps is
# missing (the session is the 4th field after the command's name in /proc/PID/stat).
lim_kill='if command -v pkill >/dev/null 2>&1; then pkill -KILL -s "$1"; else
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    [ "$(sed "s/.*) //" "$p/stat" 2>/dev/null | cut -d" " -f4)" = "$1" ] && kill -s KILL "${p#/proc/}"
  done
fi 2>/dev/null'

limited() {
  lim_s=$1
  shift
  if ! command -v setsid >/dev/null 2>&1; then
    timeout "$lim_s" "$@"
    return
  fi
  lim_file=$(mktemp)
  # in the new session: its id written, the watcher of the caller ($$), then timeout
  setsid -w sh -c 'echo $$ >"$0"; c=$1 k=$2; shift 2
    (while kill -0 "$c" 2>/dev/null; do sleep 1; done; sh -c "$k" sh $$) </dev/null >/dev/null 2>&1 &
    exec timeout "$@"' "$lim_file" "$$" "$lim_kill" "$lim_s" "$@"
  lim_rc=$?
  lim_sid=$(cat "$lim_file" 2>/dev/null)
  rm -f "$lim_file"
  [ -n "$lim_sid" ] && sh -c "$lim_kill" sh "$lim_sid"
  return $lim_rc
}
