"""What a job file says, below ``check`` and the providers' readers: the launch-script parser (:mod:`.shell`) and the
facts read from a job spec (:mod:`.facts`), so that both sides import them at the top and neither imports the other."""
