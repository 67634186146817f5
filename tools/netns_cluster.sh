#!/usr/bin/env bash
# A simulated cluster on one machine (needs root and `ip netns`): N network
# namespaces, the "hosts" 10.29.0.1 .. 10.29.0.N, each joined by a veth link
# to a bridge that lives in a namespace of its own, so the cluster has no
# route out and the machine's own network is untouched. MPI traffic really
# crosses the links: ranks run with UCX_TLS=tcp,self (without it UCX would
# use shared memory between namespaces of one machine).
#
#   tools/netns_cluster.sh up N            make the cluster (replacing one of that name)
#   tools/netns_cluster.sh down            remove it (every namespace, their processes killed)
#   tools/netns_cluster.sh mpiexec N ARGS  mpiexec -n N, one rank per host, started from
#                                          host 1 with this script as the launcher's ssh
#                                          ($MPIEXEC: MPICH's hydra or Open MPI's mpirun)
#   tools/netns_cluster.sh link I down|up|drop|undrop|rate MBIT
#                                          host I's link: down/up; drop = 100 % loss
#                                          (tc's blackhole qdisc on both ends: every
#                                          packet vanishes silently, as on a dead link);
#                                          rate = token bucket both ways (tc tbf)
#   tools/netns_cluster.sh -x HOST CMD...  (hydra's -launcher-exec: runs CMD on HOST)
#   tools/netns_cluster.sh hosts           the hosts' addresses, one a line
#
# PPCC_NETNS names the cluster (default "ppcc"; a few letters: interface
# names are short), so several clusters can coexist. The mpiexec mode bounds
# the whole job: hydra's MPIEXEC_TIMEOUT defaults to PPCC_MPI_TIMEOUT * 2 + 30
# seconds (PPCC_MPI_TIMEOUT defaults to 300), after which hydra kills every rank.
set -euo pipefail
name=${PPCC_NETNS:-ppcc}
self=$(readlink -f "$0")
state=/run/ppcc-netns-$name # the number of hosts
tmp_root=${TMPDIR:-/tmp}/ppcc-netns-$name # per-host temp dirs (Open MPI's session directories)
ns() { echo "${name}h$1"; }
sw="${name}sw"
addr() { echo "10.29.0.$1"; }

n_hosts() { [[ -r $state ]] || { echo "netns_cluster: no cluster '$name' (run: $0 up N)" >&2; exit 2; }; cat "$state"; }

down() {
  local n=0 i pids
  [[ -r $state ]] && n=$(cat "$state")
  for ((i = 1; i <= n; i++)); do
    if ip netns list | grep -qw "$(ns "$i")"; then
      pids=$(ip netns pids "$(ns "$i")" || true)
      [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
      ip netns del "$(ns "$i")"
    fi
  done
  ip netns list | grep -qw "$sw" && ip netns del "$sw"
  rm -rf "$state" "$tmp_root"
}

up() {
  local n=$1 i
  [[ $n =~ ^[1-9][0-9]?$ && $n -le 64 ]] || { echo "netns_cluster: up needs 1..64 hosts, got '$n'" >&2; exit 2; }
  down
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge forward_delay 0 # a port that comes back up forwards at once
  ip -n "$sw" link set br0 up
  ip -n "$sw" link set lo up
  for ((i = 1; i <= n; i++)); do
    ip netns add "$(ns "$i")"
    ip link add eth0 netns "$(ns "$i")" type veth peer name "p$i" netns "$sw"
    ip -n "$sw" link set "p$i" master br0 up
    ip -n "$(ns "$i")" addr add "$(addr "$i")/24" dev eth0
    ip -n "$(ns "$i")" link set eth0 up
    ip -n "$(ns "$i")" link set lo up
  done
  echo "$n" > "$state"
}

# link I down|up|drop|undrop|rate MBIT: acts on both ends (host side and bridge side).
link() {
  local i=$1 what=$2 dev
  [[ $i -ge 1 && $i -le $(n_hosts) ]] || { echo "netns_cluster: no host $i" >&2; exit 2; }
  case $what in
    down | up) ip -n "$sw" link set "p$i" "$what" ;;
    drop)
      for dev in "$(ns "$i") eth0" "$sw p$i"; do
        set -- $dev
        tc -n "$1" qdisc replace dev "$2" root blackhole
      done ;;
    undrop)
      for dev in "$(ns "$i") eth0" "$sw p$i"; do
        set -- $dev
        tc -n "$1" qdisc del dev "$2" root 2>/dev/null || true
      done ;;
    rate)
      local mbit=$3
      for dev in "$(ns "$i") eth0" "$sw p$i"; do
        set -- $dev
        tc -n "$1" qdisc replace dev "$2" root tbf rate "${mbit}mbit" burst 64kb latency 400ms
      done ;;
    *) echo "netns_cluster: link $i: unknown action '$what'" >&2; exit 2 ;;
  esac
}

case ${1:-} in
  up) up "${2:-}" ;;
  down) down ;;
  hosts) for ((i = 1; i <= $(n_hosts); i++)); do addr "$i"; done ;;
  link) shift; link "$@" ;;
  -x | 10.29.0.*) # the launchers' ssh: [-x] HOST CMD... (CMD as ssh would run it: through a shell)
    [[ $1 != -x ]] || shift
    host=$1
    shift
    i=${host##*.}
    [[ $host == "$(addr "$i")" ]] || { echo "netns_cluster: unknown host '$host'" >&2; exit 255; }
    # Like an ssh session that ends with its client: the command runs in a
    # session of its own, and once mpiexec (this script's parent, which may
    # kill this script first) is gone, a watcher kills what is left of that
    # session (a cut-off host's proxy or daemon would otherwise wait for good).
    # (in the background, a job is not a process group leader, so setsid
    # needs no fork: the session's id is $!)
    # Each host its own temp dir for Open MPI's session directories: the
    # "hosts" share /tmp and the host name, and two daemons of one job
    # creating /tmp/ompi.HOST.UID/jf.N at once made one fail ("mkdir ...
    # File exists", orte_init failed) in about 1 of 10 4-host runs.
    export OMPI_MCA_orte_tmpdir_base=$tmp_root/h$i
    mkdir -p "$OMPI_MCA_orte_tmpdir_base"
    ip netns exec "$(ns "$i")" setsid sh -c "$*" 0<&0 &
    child=$!
    setsid bash -c 'while kill -0 "$1" 2> /dev/null; do sleep 0.5; done
      left=$(ps -o pid= -s "$2"); [[ -z $left ]] || kill -9 $left' _ "$PPID" "$child" < /dev/null > /dev/null 2>&1 &
    wait "$child" ;;
  mpiexec)
    n=$2
    shift 2
    hosts=$(for ((i = 1; i <= n; i++)); do addr "$i"; done | paste -sd,)
    [[ $n -le $(n_hosts) ]] || { echo "netns_cluster: $n ranks but the cluster has $(n_hosts) hosts" >&2; exit 2; }
    export MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-$((${PPCC_MPI_TIMEOUT:-300} * 2 + 30))}
    # The launcher's own timeout cannot end mpiexec while a proxy is
    # unreachable (it waits to signal it): timeout(1) ends it 10 s later.
    mpiexec=${MPIEXEC:-mpiexec}
    bounded=(timeout -k 2 $((MPIEXEC_TIMEOUT + 10)) "$mpiexec")
    if "$mpiexec" --version 2>&1 | grep -q "OpenRTE\|Open MPI"; then
      # Open MPI: its own TCP transport (ob1/tcp, no UCX) on eth0; as root
      # it needs the allow-root variables.
      exec ip netns exec "$(ns 1)" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        "${bounded[@]}" --mca plm_rsh_agent "$self" --host "$hosts" --npernode 1 -n "$n" \
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 "$@"
    fi
    exec ip netns exec "$(ns 1)" env UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 \
      "${bounded[@]}" -launcher ssh -launcher-exec "$self" -localhost "$(addr 1)" -hosts "$hosts" -ppn 1 -n "$n" \
      -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 "$@" ;;
  *) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
