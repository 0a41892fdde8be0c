# helper-unknown, accepted: ktime_get_ns, get_smp_processor_id, get_current_pid_tgid and
# the GPU helpers with no arguments.
call 5
call 8
call 14
call 502
call 506
call 509
call 510
call 511
r0 = 0
exit
