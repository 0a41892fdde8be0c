# fall-through, accepted neighbour: a function may end in an unconditional jump.
r0 = 0
goto done
done2:
r0 = 2
exit
done:
goto done2
