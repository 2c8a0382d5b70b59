from llmcalc.cli import run

run()
