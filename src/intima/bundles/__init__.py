"""What leaves and enters a store as files: result bundles (published, imported, every row
checked), response exports, and the doctor that holds a store to a bundle's rules."""
