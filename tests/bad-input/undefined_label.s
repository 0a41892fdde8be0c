ja nowhere
exit
