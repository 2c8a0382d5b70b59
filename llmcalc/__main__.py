from llmcalc.cli import main

main()
