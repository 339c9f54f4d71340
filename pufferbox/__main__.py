from pufferbox.cli import main

main()
