/* The page's scripts and style sheets in the reporter (page.h): each file
 * of $(BUILD)/page/, which the Makefile makes from reporter/out/page/, read
 * in whole between a symbol and the same name with _end. The Makefile's
 * rule gives the assembler that folder to look in (-Wa,-I). */

/* asset NAME, FILE: NAME .. NAME_end hold FILE's bytes, no NUL after. */
    .macro asset name, file
    .global \name, \name\()_end
    .type \name, %object
\name:
    .incbin "\file"
\name\()_end:
    .size \name, \name\()_end - \name
    .endm

    .section .rodata
    asset rsr_page_report_css, "report.css"
    asset rsr_page_report_js, "report.js"
    asset rsr_page_flame_css, "flame.css"
    asset rsr_page_flame_js, "flame.js"
    asset rsr_page_flame_switch_js, "flame_switch.js"
    asset rsr_page_history_css, "history.css"

/* no executable stack for the program that links this */
    .section .note.GNU-stack, "", %progbits
