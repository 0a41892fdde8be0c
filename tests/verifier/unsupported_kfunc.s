# unsupported: kernel functions (kfuncs) do not exist on the GPU.
call kfunc(1234)         ; error: unsupported kfunc
r0 = 0
exit
