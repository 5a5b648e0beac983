# Sourced by tests/gpu/device-check.sh and device-run.sh. limited SECONDS COMMAND [ARG...]: COMMAND
# under timeout in a session of its own, then whatever of that session is left is killed. timeout
# alone stops only its own process group, and the GPU tests' runs sit under timeouts of their own
# (process groups of their own) that would go on using the GPU beside the next test. Exit status:
# COMMAND's, or 124 when the time ran out.
limited() {
  lim_s=$1
  shift
  if ! command -v setsid >/dev/null 2>&1; then
    timeout "$lim_s" "$@"
    return
  fi
  lim_file=$(mktemp)
  setsid -w sh -c 'echo $$ >"$0"; exec timeout "$@"' "$lim_file" "$lim_s" "$@"
  lim_rc=$?
  lim_sid=$(cat "$lim_file" 2>/dev/null)
  rm -f "$lim_file"
  if [ -n "$lim_sid" ]; then
    if command -v pkill >/dev/null 2>&1; then pkill -KILL -s "$lim_sid" 2>/dev/null; else kill -KILL -- "-$lim_sid" 2>/dev/null; fi
  fi
  return $lim_rc
}
