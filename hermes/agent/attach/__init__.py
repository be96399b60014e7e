"""What a person attaches to a prompt on their own machine: `@` mentions (files, line ranges,
folder listings) and images, read under the file tools' read policy (`read_policy`)."""
