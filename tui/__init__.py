"""dflash-plan's terminal front ends: the headless command line (cli) and the Textual app
(app). The command line imports no textual."""
