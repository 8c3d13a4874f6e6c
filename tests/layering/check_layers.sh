#!/bin/sh
# Fails when a module includes or links a module above it
# (docs/architecture.md): the layers, bottom up, are
#   base < trace_format < profiler < job < runtime
# with viewer/core beside profiler (on trace_format only), and viewer/app
# and tools on top, neither of which may use the runtime.
# Usage: check_layers.sh SOURCE_ROOT
set -u
root=${1:?usage: check_layers.sh SOURCE_ROOT}
cd "$root" || exit 2
status=0

# allowed MODULE_DIR "modules it may include (podscope/<m>/) and link"
check() {
  dir=$1
  allowed=$2
  used=$(grep -rhoE '#include [<"]podscope/[a-z_]+/' \
           --include='*.cc' --include='*.h' "$dir" |
         sed -E 's/.*podscope\/([a-z_]+)\//\1/' | sort -u)
  for m in $used; do
    case " $allowed " in
      *" $m "*) ;;
      *)
        echo "layering: $dir includes podscope/$m/, which is above it:"
        grep -rnE "#include [<\"]podscope/$m/" --include='*.cc' \
          --include='*.h' "$dir" | head -5
        status=1
        ;;
    esac
  done
  linked=$(grep -hoE 'podscope::[a-z_]+' $(find "$dir" -name CMakeLists.txt) |
           sed -E 's/podscope::([a-z_]+)/\1/' | sed -E 's/^(profiler)_server$/\1/;
             s/^viewer_(core|query)$/viewer/' | sort -u)
  for m in $linked; do
    case " $allowed " in
      *" $m "*) ;;
      *)
        echo "layering: $dir links podscope::$m, which is above it"
        status=1
        ;;
    esac
  done
}

check base "base"
check trace_format "base trace_format"
check profiler "base trace_format profiler"
check job "base trace_format profiler job"
check runtime "base trace_format profiler job runtime"
check viewer/core "base trace_format viewer"
check viewer/app "base trace_format profiler job viewer"
check tools "base trace_format profiler job viewer"

[ $status -eq 0 ] && echo "layering: every module uses only the ones below it"
exit $status
